"""Strip the exporter's stack traces from ONNX graphs: torch.onnx records, on every node, the
Python stack that made it (`pkg.torch.onnx.stack_trace`), with the absolute source paths of the
machine that exported it. Served files must not carry them. Only that metadata goes: the graph,
its names and its weights stay byte for byte what they were.

    python -m training.onnx_meta models            # rewrite every .onnx under models/ in place
    python -m training.onnx_meta --check models    # exit 1 if any still carries stack traces
"""
from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path

STACK_TRACE = "pkg.torch.onnx.stack_trace"


def strip_ir(model) -> None:
    """An onnx_ir model (what torch.onnx.export returns as `.model`), before it is saved."""
    for graph in (model.graph, *model.functions.values()):
        for node in graph:
            node.metadata_props.pop(STACK_TRACE, None)


def _props_lists(proto):
    """Every node's metadata list in a ModelProto (functions and subgraphs included)."""
    import onnx

    graphs = [proto.graph]
    while graphs:
        g = graphs.pop()
        for node in g.node:
            yield node.metadata_props
            for attr in node.attribute:
                graphs += [attr.g] if attr.type == onnx.AttributeProto.GRAPH else list(attr.graphs)
    for f in proto.functions:
        for node in f.node:
            yield node.metadata_props


def count(path: Path) -> int:
    import onnx

    proto = onnx.load(str(path), load_external_data=False)
    return sum(p.key == STACK_TRACE for props in _props_lists(proto) for p in props)


def strip_file(path: Path) -> int:
    """Rewrite one file without its stack traces (written aside, renamed into place); how many went."""
    import onnx

    proto = onnx.load(str(path), load_external_data=False)
    gone = 0
    for props in _props_lists(proto):
        keep = [p for p in props if p.key != STACK_TRACE]
        gone += len(props) - len(keep)
        if gone and len(keep) != len(props):
            saved = [(p.key, p.value) for p in keep]
            del props[:]
            for key, value in saved:
                props.add(key=key, value=value)
    if gone:
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_bytes(proto.SerializeToString())
        os.replace(tmp, path)
    return gone


def update_sizes(folder: Path) -> None:
    """Cards and inspection.json record each graph's size ("file": NAME, "bytes": N): keep them true."""
    for path in folder.glob("*.json"):
        text = path.read_text(encoding="utf-8")
        new = re.sub(r'("file": "([^"/]+\.onnx)",\s*"bytes": )([0-9]+)',
                     lambda m: m.group(1) + str((folder / m.group(2)).stat().st_size) if (folder / m.group(2)).is_file()
                     else m.group(0), text)
        if new != text:
            tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
            tmp.write_text(new, encoding="utf-8")
            os.replace(tmp, path)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m training.onnx_meta", description=__doc__.split("\n")[0])
    p.add_argument("paths", nargs="+", help=".onnx files or folders (searched recursively)")
    p.add_argument("--check", action="store_true", help="only report; exit 1 if any file carries stack traces")
    args = p.parse_args(argv)
    files = sorted(f for x in map(Path, args.paths) for f in ([x] if x.is_file() else x.rglob("*.onnx")))
    dirty = 0
    for f in files:
        n = count(f) if args.check else strip_file(f)
        dirty += n > 0
        print(f"{f}: {n} stack traces {'found' if args.check else 'removed'}")
        if n and not args.check:
            update_sizes(f.parent)
    return 1 if args.check and dirty else 0


if __name__ == "__main__":
    sys.exit(main())
