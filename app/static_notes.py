"""What the static copy (app/static_build.py) says on the pages it cannot run: each page that needs the
playground's server is replaced by a short page saying what it needs, with a link to the page on
running the playground yourself (self-hosting/, written here too). Words for a 16-year-old."""
from __future__ import annotations

import html

SERVER = ("A <em>server</em> is a program that runs on a computer (the teacher's laptop, a school machine) and "
          "answers the pages you open.")
# path -> (the page's title, what it needs and why)
NEEDS = {
    "/concepts": ("Concept check", "The questions and their explanations are kept and checked by the "
                  "playground's server."),
    "/train": ("Train", "Training a model takes minutes of a computer's full power and a trainer (PyTorch) "
               "that only the playground's server runs."),
    "/finetune": ("Fine-tune lab", "Fine-tuning trains models, which only the playground's server can do."),
    "/teach": ("Your class", "The teacher's start page belongs to a playground server: its lessons and its classes "
               "are kept there."),
    "/class": ("Class session", "A class session keeps every student's answers on the teacher's computer: "
               "the teacher runs the playground's server and the class joins it."),
    "/lessons": ("Lessons", "Lessons are prepared and kept on the teacher's playground server, which gives them to "
                 "a class."),
    "/join": ("Join a class", "Joining a class needs the teacher's playground server: ask your teacher for "
              "its address (it looks like http://192.168.1.20:8000/join)."),
    "/report": ("Class report", "A class's report is made from the answers its students sent to the teacher's "
                "playground server, and only the teacher can open it there."),
    "/login": ("Instructor login", "The instructor's login belongs to a playground server: it lets the "
               "teacher start training runs and class sessions there."),
    "/docs": ("API reference", "The API reference describes the playground server's API (how programs ask it "
              "for answers); this copy has no server."),
}
# A page that runs on the device, made from a set that cannot run it (app/static_build.py)
WITHOUT_GRAPHS = {"/attention": ("The mask is the worldview", "This copy was made from a model set without the "
                                 "attention graphs (a second copy of each model that also reports what each character "
                                 "looks at), so only the playground's server can show the weights.")}
SELF_HOSTING = "/self-hosting"
SELF_HOSTING_TITLE = "Run the playground yourself"
SELF_HOSTING_BODY = f"""
<p class="lead">This copy of the playground has no server: Generation, Mask-Fill, the NSP Quiz, GPT vs BERT, the attention weights (The mask) and ELECTRA (on Objectives) run in your browser, and the
  pages that need a server say so. {SERVER} To get every page, run the playground's server yourself:</p>
<ol>
  <li>On a computer with Python 3.11 or newer, get the playground's source code (the folder this copy was made
    from) and install it: <code>pip install -e .</code></li>
  <li>Start it: <code>python -m app</code>, then open <code>http://127.0.0.1:8000</code> on that computer.</li>
  <li>For a class on the same Wi-Fi: <code>python -m app --host 0.0.0.0</code>; it prints the address the
    students' phones open and the teacher's login link.</li>
</ol>
<p>The source's README.md and docs/serving.md explain more (classes, training your own models).</p>
"""


def needs_server_body(path: str, needs: dict = NEEDS) -> tuple[str, str]:
    """(title, the <main> content) of the short page that replaces `path` in the static copy."""
    title, need = needs[path]
    body = (f'\n<p class="lead static-note" role="note">This page needs the playground\'s server, and this copy of '
            f"the playground has none. {html.escape(need, quote=False)}</p>\n<p>{SERVER}</p>\n"
            f'<p><a href="{SELF_HOSTING}">How to run the playground yourself</a>, or try what runs here: '
            f'<a href="/generate">Generation</a>, <a href="/mask-fill">Mask-Fill</a>, <a href="/nsp">the NSP Quiz</a> and <a href="/compare">GPT vs BERT</a>.</p>\n')
    return title, body
