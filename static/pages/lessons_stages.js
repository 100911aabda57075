/* One stage's fields in the lesson editor, by kind: its title and the teacher's notes for every kind;
   an applet's page, its settings (pasted from the applet's share link, or as name = value rows) and
   what the phones show; Label together's label names and lines. The class activities' pickers (NSP
   pairs, Be-the-BERT characters, concept questions) are lessons_picks.js.
   stageBody(stage, path, changed, ctx)  the nodes; `path` is the stage's place in the file
       (stages[3]): every control carries data-path="stages[3].<field>" so a refusal of the server,
       which names that path, lands beside it (lessons_editor.js). The stage object is edited in place;
       changed() after every edit. ctx: {applets: [{path, name}], concepts: the concept bank} */
import { clear, el } from "../lib/dom.js";
import { fieldMessage } from "../lib/errors.js";
import { button, field, fromAddress, queryOf, shown, typed, uid } from "./lessons_kit.js";
import { conceptPicker, fillItems, nspPairs } from "./lessons_picks.js";

export function stageBody(stage, path, changed, ctx) {
  const title = el("input", { type: "text", maxlength: "80", value: stage.title, dataset: { path: path + ".title" },
    oninput: (e) => { stage.title = e.target.value; changed(); } });
  const nodes = [field("Title (on your list and the class's screen)", title, { wide: true })];
  if (stage.kind === "applet") nodes.push(...appletFields(stage, path, changed, ctx.applets));
  else if (stage.kind === "nsp") nodes.push(...nspPairs(stage, path, changed));
  else if (stage.kind === "fill") nodes.push(...fillItems(stage, path, changed));
  else if (stage.kind === "concept") nodes.push(...conceptPicker(stage, path, changed, ctx.concepts));
  else if (stage.kind === "label") nodes.push(...labelFields(stage, path, changed));
  const notes = el("textarea", { rows: "2", maxlength: "2000", dataset: { path: path + ".notes" },
    oninput: (e) => { stage.notes = e.target.value; changed(); } });
  notes.value = stage.notes || "";
  nodes.push(field("Your notes (only you see them)", notes, { wide: true }));
  return nodes;
}

/* ---------- an applet: its page, its settings, the phones ---------- */
function appletFields(stage, path, changed, pages) {
  if (!stage.state) stage.state = {};
  const page = el("select", { dataset: { path: path + ".page" }, onchange: (e) => { stage.page = e.target.value; after(); } },
    pages.map((p) => el("option", { value: p.path, selected: p.path === stage.page, text: p.name + " (" + p.path + ")" })));
  const open = el("a", { class: "l-open", target: "_blank", rel: "noopener" });
  const rows = el("div", { class: "l-kv", role: "group", id: uid("kv"), dataset: { path: path + ".state" } });
  const drawRows = () => settingRows(rows, stage, after);
  function after() {
    open.href = stage.page + "?" + queryOf(stage.state);
    open.textContent = "Open " + (pages.find((p) => p.path === stage.page) || { name: stage.page }).name +
      " with these settings (a new tab) ↗";
    changed();
  }

  const address = el("input", { type: "text", id: uid("address"), spellcheck: "false", autocomplete: "off", placeholder: "http://…" + stage.page + "?…",
    onkeydown: (e) => { if (e.key === "Enter") { e.preventDefault(); take(); } } });
  function take() {
    const got = fromAddress(address.value, pages.map((p) => p.path));
    fieldMessage(address, "", "notice");
    if (got.error) {
      fieldMessage(address, got.error, "error");
      return;
    }
    fieldMessage(address, "", "error");
    stage.page = got.page;
    stage.state = got.state;
    page.value = got.page;
    drawRows();
    after();
    const n = Object.keys(got.state).length;
    fieldMessage(address, "Taken: " + (pages.find((p) => p.path === got.page) || {}).name + " with " + n +
      (n === 1 ? " setting" : " settings") + (got.dropped.length ? "; left out " + got.dropped.join(", ") +
      " (the class session sets " + (got.dropped.length === 1 ? "it" : "them") + ")" : "") + ".", "notice");
  }

  const phones = el("fieldset", { class: "l-radios", dataset: { path: path + ".phones" } }, [
    el("legend", { text: "What the students' phones show" }),
    ...[["applet", "The same applet, following you"], ["projector", "A card: “look at the projector”"]].map(([value, words]) =>
      el("label", {}, [el("input", { type: "radio", name: uid("phones"), value, checked: stage.phones === value,
        onchange: () => { stage.phones = value; changed(); } }), " " + words])),
  ]);
  drawRows();
  after();
  return [
    field("The applet", page),
    el("div", { class: "control wide" }, [
      el("label", { for: address.id,
        text: "Its settings, the easy way: open the applet, set it up, then paste the address from its “Share this setup” panel" }),
      el("div", { class: "l-inline" }, [address, button("Use this address", take)])]),
    el("div", { class: "control wide" }, [
      el("span", { class: "label", id: rows.id + "-h", text: "Its settings, one per row (name = value)" }), rows, open]),
    phones,
  ];
}

/* The settings as rows of name = value; a row with no name is left out of the file. */
function settingRows(box, stage, after) {
  clear(box);
  box.setAttribute("aria-labelledby", box.id + "-h");
  const entries = Object.entries(stage.state);
  const list = el("ol", { class: "l-kv-rows" });
  const collect = () => {
    const state = {};
    for (const row of list.children) {
      const key = row.querySelector(".l-kv-key").value.trim();
      if (key) state[key] = typed(row.querySelector(".l-kv-value").value);
    }
    stage.state = state;
    after();
  };
  const addRow = (key, value) => {
    const k = list.children.length + 1;
    const row = el("li", { class: "l-kv-row" }, [
      el("input", { type: "text", class: "l-kv-key", value: key, spellcheck: "false", maxlength: "24", "aria-label": "Setting " + k + ": name",
        oninput: collect }),
      el("span", { "aria-hidden": "true", text: "=" }),
      el("input", { type: "text", class: "l-kv-value", value: value, spellcheck: "false", maxlength: "1000",
        "aria-label": "Setting " + k + ": value", oninput: collect }),
      button("Remove", () => { row.remove(); collect(); }, { attrs: { "aria-label": "Remove setting " + k } }),
    ]);
    list.append(row);
    return row;
  };
  for (const [key, value] of entries) addRow(key, shown(value));
  box.append(list, button("Add a setting", () => addRow("", "").querySelector("input").focus()));
  if (!entries.length) box.prepend(el("p", { class: "note", text: "No settings: the applet opens as it starts." }));
}

/* ---------- Label together: the label names and the lines ---------- */
function labelFields(stage, path, changed) {
  const names = el("input", { type: "text", spellcheck: "false", value: (stage.labels || []).join(", "), dataset: { path: path + ".labels" },
    oninput: (e) => { stage.labels = e.target.value.split(",").map((x) => x.trim()).filter(Boolean); changed(); } });
  const lines = el("textarea", { rows: "8", spellcheck: "false", dataset: { path: path + ".lines" },
    oninput: (e) => { stage.lines = e.target.value.split("\n").map((x) => x.trim()).filter(Boolean); changed(); } });
  lines.value = (stage.lines || []).join("\n");
  return [field("Label names, separated by commas (2 to 10)", names, { wide: true }),
    field("Lines to label, one per line", lines, { wide: true, hint: "Everyone labels every line; the pooled labels can then fine-tune a model." })];
}
