// ChatInput: the ChatPanel's input line and Send button. Enter (without Shift, outside IME
// composition) or a click on Send posts a "submit" message carrying the text as typed, so a
// fast click can never send an older value. The value is also synced on every keystroke.
function render({ model, el }) {
  const input = document.createElement("input");
  input.type = "text";
  input.className = "zc-chat-input-field";
  input.setAttribute("aria-label", "Question for your library");
  const send = document.createElement("button");
  send.className = "zc-chat-send jupyter-button mod-primary";
  send.textContent = "Send";
  send.title = "Send the question (Enter)";
  const submit = () => {
    if (model.get("disabled")) return;
    model.send({ event: "submit", value: input.value });
  };
  const fromModel = () => {
    if (input.value !== model.get("value")) input.value = model.get("value");
    input.placeholder = model.get("placeholder");
    input.disabled = model.get("disabled");
    send.disabled = model.get("disabled");
  };
  fromModel();
  input.addEventListener("input", () => {
    model.set("value", input.value);
    model.save_changes();
  });
  input.addEventListener("keydown", (event) => {
    event.stopPropagation();  // keep JupyterLab's notebook shortcuts out of the chat
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      submit();
    }
  });
  send.addEventListener("click", submit);
  const names = ["change:value", "change:placeholder", "change:disabled"];
  for (const name of names) model.on(name, fromModel);
  el.append(input, send);
  return () => { for (const name of names) model.off(name, fromModel); };
}

export default { render };
