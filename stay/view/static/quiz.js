// The quiz reveal: choosing an option opens the item's explanation and marks the
// item answered. Everything works without this script too (each <details> opens on
// its own); it only saves a click and colours the choice.
"use strict";
document.addEventListener("toggle", function (event) {
  var option = event.target;
  if (!(option instanceof HTMLDetailsElement) || !option.classList.contains("option") || !option.open) {
    return;
  }
  var item = option.closest(".quiz-item");
  if (!item) {
    return;
  }
  item.classList.add("answered");
  item.classList.toggle("answered-right", option.classList.contains("correct"));
  var explanation = item.querySelector("details.explanation");
  if (explanation) {
    explanation.open = true;
  }
}, true);
