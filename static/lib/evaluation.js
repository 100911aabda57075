/* A card's evaluation splits, for the tables of the model cards (home page, static/families/).
   splits(card)        the split names, validation first
   splitName(card, s)  "validation (macbeth, twelfth night)": which held-out plays a split is */
export function splits(card) {
  const keys = Object.keys(card.evaluation || {});
  return keys.sort((a, b) => (a === "validation" ? -1 : b === "validation" ? 1 : a.localeCompare(b)));
}

export function splitName(card, s) {
  const docs = (card.evaluation[s] || {}).documents || [];
  return docs.length ? s + " (" + docs.join(", ").replace(/_/g, " ") + ")" : s;
}
