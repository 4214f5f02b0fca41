// The quiz: nothing says which option is right until the learner answers. "Check my
// answer" answers the question once, with the chosen option: the choice gets its
// verdict (and why it is wrong), the right option is marked, the explanation opens,
// and the quiz's score is updated. A short answer shows the model answer only once something is typed.
// Answers are kept through progress.js (window.stayProgress) and shown again on a
// reload, and follow what another tab answers or resets. Without this script the page
// still works: the radio buttons choose, and one "Check your answers" disclosure after
// the items reveals every answer.
"use strict";
(function () {
  var quiz = document.querySelector("section.quiz");
  if (!quiz) {
    return;
  }
  var progress = window.stayProgress || null;
  var host = document.querySelector(".lesson-progress[data-course]");
  var slug = host ? host.getAttribute("data-course") : null;
  var MAX_ANSWER = 4000; // progress.js keeps no longer answer

  function stored() {
    return progress && slug ? progress.load(slug).quiz : Object.create(null);
  }

  function remember(id, answer) {
    if (progress && slug) {
      var state = progress.load(slug);
      state.quiz[id] = answer;
      progress.save(slug, state);
    }
  }

  var key = quiz.querySelector("details.answers");
  if (key) {
    key.hidden = true; // with script each question answers for itself
  }
  var score = quiz.querySelector(".score");
  var items = Array.prototype.slice.call(quiz.querySelectorAll(".quiz-item[data-item]"));
  var choices = items.filter(function (item) {
    return item.querySelector("fieldset.options");
  });

  function show(element) {
    if (element) {
      element.hidden = false;
    }
  }

  function answerChoice(item, chosen) {
    var options = item.querySelectorAll("fieldset.options li.option");
    if (item.classList.contains("answered") || chosen < 0 || chosen >= options.length) {
      return false;
    }
    var right = options[chosen].hasAttribute("data-correct");
    options.forEach(function (option, index) {
      var input = option.querySelector("input");
      var correct = option.hasAttribute("data-correct");
      input.checked = index === chosen;
      input.disabled = index !== chosen; // answered once: the choice stands
      option.classList.toggle("chosen", index === chosen);
      option.classList.toggle("is-correct", correct);
      if (index === chosen) {
        show(option.querySelector(".verdict"));
      } else if (correct) {
        show(option.querySelector(".right-answer"));
      }
    });
    item.classList.add("answered");
    item.classList.toggle("answered-right", right);
    show(item.querySelector(".explanation"));
    return true;
  }

  function answerShort(item, text) {
    var field = item.querySelector("textarea");
    if (!field || !text.trim()) {
      return false;
    }
    field.value = text;
    item.classList.add("answered");
    show(item.querySelector(".model-answer"));
    show(item.querySelector(".explanation"));
    return true;
  }

  function unanswer(item) {
    // progress reset in another tab: the question is open again, as on a first visit
    item.querySelectorAll("fieldset.options li.option").forEach(function (option) {
      var input = option.querySelector("input");
      input.checked = false;
      input.disabled = false;
      option.classList.remove("chosen", "is-correct");
    });
    item.querySelectorAll(".verdict, .right-answer, .model-answer, .explanation").forEach(function (element) {
      element.hidden = true;
    });
    item.classList.remove("answered", "answered-right");
  }

  function tally() {
    if (!score) {
      return;
    }
    var answered = choices.filter(function (item) {
      return item.classList.contains("answered");
    });
    var right = answered.filter(function (item) {
      return item.classList.contains("answered-right");
    }).length;
    var left = choices.length - answered.length;
    if (!answered.length) {
      score.textContent = "";
    } else if (left) {
      score.textContent = "Score so far: " + right + " of " + answered.length + " answered right; " + left +
        (left === 1 ? " question" : " questions") + " to go.";
    } else {
      score.textContent = "Score: " + right + " of " + choices.length + " right.";
    }
  }

  var kept = stored();
  var readies = []; // each item's ready(): its button follows the item's state
  function own(answers, id) {
    return Object.prototype.hasOwnProperty.call(answers, id) ? answers[id] : null;
  }
  items.forEach(function (item) {
    var id = item.getAttribute("data-item");
    var answer = own(kept, id);
    if (item.querySelector("fieldset.options")) {
      if (typeof answer === "number") {
        answerChoice(item, answer);
      }
      // answered on the button, never on a change: arrow keys change the choice as they move
      var check = item.querySelector("button.check-answer");
      if (!check) {
        return;
      }
      show(check.parentElement);
      function choice() {
        var input = item.querySelector("fieldset.options input[type=radio]:checked");
        return input ? parseInt(input.value, 10) : -1;
      }
      function ready() {
        check.disabled = item.classList.contains("answered") || choice() < 0;
      }
      readies.push(ready);
      ready();
      item.addEventListener("change", ready);
      check.addEventListener("click", function () {
        var chosen = choice();
        if (answerChoice(item, chosen)) {
          remember(id, chosen);
          tally();
        }
        ready();
      });
      return;
    }
    var field = item.querySelector("textarea");
    var button = item.querySelector("button.show-answer");
    if (!field || !button) {
      return;
    }
    show(button.parentElement);
    if (typeof answer === "string") {
      answerShort(item, answer);
    }
    function ready() {
      button.disabled = !field.value.trim();
    }
    readies.push(ready);
    ready();
    field.addEventListener("input", ready);
    button.addEventListener("click", function () {
      var text = field.value.slice(0, MAX_ANSWER);
      if (answerShort(item, text)) {
        remember(id, text);
      }
    });
  });
  tally();

  // answered in another tab: shown here too, so this page never asks (and stores) again;
  // a reset there opens the questions here
  if (progress && slug && progress.watch) {
    progress.watch(slug, function (state) {
      items.forEach(function (item) {
        var answer = own(state.quiz, item.getAttribute("data-item"));
        var choice = !!item.querySelector("fieldset.options");
        if (answer === null) {
          if (item.classList.contains("answered")) {
            unanswer(item); // an unanswered item keeps the choice being made here
          }
        } else if (!item.classList.contains("answered")) {
          if (choice && typeof answer === "number") {
            answerChoice(item, answer);
          } else if (!choice && typeof answer === "string") {
            answerShort(item, answer);
          }
        }
      });
      readies.forEach(function (ready) {
        ready();
      });
      tally();
    });
  }
}());
