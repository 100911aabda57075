/* The NSP Quiz's running scores, kept in sessionStorage (a private window keeps them for the page
   view only): one for the open quiz, and one per class set (its question ids, in order), so a
   student who reloads or comes back to the set's link finds their answers.
   score(ids)           {n, you, model}: the open quiz's (ids empty) or the set's
   answered(ids, id)    the stored answer to question `id` of the set, or undefined
   record(ids, r, guess)  an answer (r: the server's {id, correct, model_correct})
   reset(ids)           start the set (or, ids empty, the open quiz) afresh */
const FREE_KEY = "pp-nsp-score";
const SET_KEY = "pp-nsp-set:";

function readStore(key, fallback) {
  try {
    const s = JSON.parse(sessionStorage.getItem(key) || "null");
    if (s && typeof s === "object") return s;
  } catch (err) { /* a broken entry starts afresh */ }
  return fallback;
}

function writeStore(key, value) {
  try {
    sessionStorage.setItem(key, JSON.stringify(value));
  } catch (err) { /* private mode: the score still shows for this page view */ }
}

let free = readStore(FREE_KEY, { n: 0, you: 0, model: 0 });
if (!Number.isFinite(free.n)) free = { n: 0, you: 0, model: 0 };
let setKey = null; // the set whose answers are in memory
let setAnswers = {}; // id -> {guess, correct, model_correct}

function answersOf(ids) {
  const key = SET_KEY + ids.join(",");
  if (key !== setKey) {
    const stored = readStore(key, {});
    setAnswers = stored && typeof stored.answers === "object" && stored.answers ? stored.answers : {};
    setKey = key;
  }
  return setAnswers;
}

export function score(ids) {
  if (!ids.length) return free;
  const answers = answersOf(ids);
  const rows = ids.map((id) => answers[id]).filter(Boolean);
  return { n: rows.length, you: rows.filter((r) => r.correct).length, model: rows.filter((r) => r.model_correct).length };
}

export function answered(ids, id) {
  return ids.length ? answersOf(ids)[id] : undefined;
}

export function record(ids, r, guess) {
  if (ids.length) {
    answersOf(ids)[r.id] = { guess, correct: r.correct, model_correct: r.model_correct };
    writeStore(SET_KEY + ids.join(","), { answers: setAnswers });
  } else {
    free = { n: free.n + 1, you: free.you + (r.correct ? 1 : 0), model: free.model + (r.model_correct ? 1 : 0) };
    writeStore(FREE_KEY, free);
  }
}

export function reset(ids) {
  if (ids.length) {
    answersOf(ids);
    setAnswers = {};
    writeStore(SET_KEY + ids.join(","), { answers: {} });
  } else {
    free = { n: 0, you: 0, model: 0 };
    writeStore(FREE_KEY, free);
  }
}
