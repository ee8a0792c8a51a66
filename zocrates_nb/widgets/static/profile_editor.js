// ProfileEditor front end: a <textarea maxlength=…> (the browser itself stops typing past the
// limit), a live counter, Save / Clear, and an inline status line. While typing the counter
// estimates tokens as chars/4 ("~T tokens"); once Python has counted the exact tokens for the
// current text (token_chars === length) it shows those. Save/Clear send the textarea's text with
// the request, so a click right after fast typing cannot save an older value.
function el_(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text) node.textContent = text;
  return node;
}

function render({ model, el }) {
  const title = el_("div", "zc-profile-title");
  title.append(el_("strong", "", "User Research Profile"),
               el_("span", "zc-muted", " — who you are and how answers should be written; sent with every question."));
  const area = el_("textarea", "zc-profile-textarea");
  area.rows = 9;
  area.setAttribute("aria-label", "User Research Profile");
  const counter = el_("div", "zc-profile-counter");
  counter.setAttribute("aria-live", "polite");
  const save = el_("button", "zc-profile-save jupyter-button mod-primary", "Save");
  save.title = "Save the profile (agents use it from the next question)";
  const clear = el_("button", "zc-profile-clear jupyter-button", "Clear");
  clear.title = "Remove the saved profile";
  const status = el_("span", "zc-profile-status");
  status.setAttribute("role", "status");
  const actions = el_("div", "zc-profile-actions");
  actions.append(save, clear, status);

  const showCounter = () => {
    const chars = area.value.length;
    const limit = model.get("max_chars");
    const exact = model.get("token_chars") === chars;
    const tokens = exact ? `${model.get("token_count")} tokens` : `~${Math.ceil(chars / 4)} tokens`;
    counter.textContent = `${chars} / ${limit} characters · ${tokens}`;
    counter.classList.toggle("zc-at-limit", chars >= limit);
  };
  const fromModel = () => {
    area.maxLength = model.get("max_chars");
    area.placeholder = model.get("placeholder");
    if (area.value !== model.get("value")) area.value = model.get("value");
    status.textContent = model.get("status");
    status.className = "zc-profile-status" + (model.get("status_kind") ? ` zc-profile-${model.get("status_kind")}` : "");
    showCounter();
  };
  fromModel();

  area.addEventListener("input", () => {
    model.set("value", area.value);
    model.save_changes();
    showCounter();
  });
  // Keep notebook command-mode shortcuts (e.g. "a", "b", "dd") from firing while typing here.
  area.addEventListener("keydown", (event) => event.stopPropagation());
  save.addEventListener("click", () => model.send({ event: "save", value: area.value }));
  clear.addEventListener("click", () => model.send({ event: "clear" }));

  const names = ["change:value", "change:placeholder", "change:max_chars", "change:token_count",
                 "change:token_chars", "change:status", "change:status_kind"];
  for (const name of names) model.on(name, fromModel);
  el.append(title, area, counter, actions);
  return () => { for (const name of names) model.off(name, fromModel); };
}

export default { render };
