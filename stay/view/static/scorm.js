// A lesson page as a SCORM 1.2 SCO (stay export --format scorm). It finds the LMS's API
// the standard way (this window, then its parents, then the top window's opener: SCORM 1.2
// RTE 3.3.6.1), calls LMSInitialize, and reports:
//   cmi.core.score.raw      the quiz's multiple-choice items answered right, 0-100, as they are
//                           answered (a short answer is the learner's own text: no LMS scores it);
//   cmi.core.lesson_status  "completed" when the learner marks the lesson finished,
// then commits and calls LMSFinish. Leaving earlier suspends the attempt (cmi.core.exit).
// Without an LMS no API is found and nothing happens: the page works as a plain page.
"use strict";
(function () {
  var MAX_PARENTS = 500; // the standard search's own bound: a frame tree deeper than this is no LMS

  function search(start) {
    var win = start;
    for (var depth = 0; win && depth <= MAX_PARENTS; depth++) {
      try {
        if (win.API) {
          return win.API;
        }
        if (!win.parent || win.parent === win) {
          return null;
        }
        win = win.parent;
      } catch (e) {
        return null; // a window of another origin: not ours to search
      }
    }
    return null;
  }

  function find() {
    var api = search(window);
    try {
      if (!api && window.top && window.top.opener) {
        api = search(window.top.opener);
      }
    } catch (e) {
      api = null;
    }
    return api;
  }

  var api = find();
  if (!api || String(api.LMSInitialize("")) !== "true") {
    return;
  }
  var started = Date.now();
  var finished = false;
  if (api.LMSGetValue("cmi.core.lesson_status") === "not attempted") {
    api.LMSSetValue("cmi.core.lesson_status", "incomplete");
  }

  function pad(number, width) {
    var text = String(number);
    while (text.length < width) {
      text = "0" + text;
    }
    return text;
  }

  function sessionTime() {
    // CMITimespan, HHHH:MM:SS (at most 9999 hours)
    var seconds = Math.min(Math.floor((Date.now() - started) / 1000), 9999 * 3600 + 3599);
    return pad(Math.floor(seconds / 3600), 4) + ":" + pad(Math.floor(seconds / 60) % 60, 2) + ":" +
      pad(seconds % 60, 2);
  }

  function score() {
    // as quiz.js marks the items: answered right, out of every multiple-choice item
    var items = document.querySelectorAll("section.quiz .quiz-item[data-item]");
    var choices = 0;
    var right = 0;
    for (var i = 0; i < items.length; i++) {
      if (items[i].querySelector("fieldset.options")) {
        choices += 1;
        right += items[i].classList.contains("answered-right") ? 1 : 0;
      }
    }
    return choices ? Math.round(100 * right / choices) : null;
  }

  var reported = null;
  function report() {
    var raw = score();
    if (raw === null || raw === reported) {
      return false;
    }
    reported = raw;
    api.LMSSetValue("cmi.core.score.min", "0");
    api.LMSSetValue("cmi.core.score.max", "100");
    api.LMSSetValue("cmi.core.score.raw", String(raw));
    return true;
  }

  function finish(exit) {
    if (finished) {
      return;
    }
    finished = true;
    report();
    api.LMSSetValue("cmi.core.session_time", sessionTime());
    if (exit) {
      api.LMSSetValue("cmi.core.exit", exit);
    }
    api.LMSCommit("");
    api.LMSFinish("");
  }

  // progress.js's button: its own listener (added first) has set aria-pressed by now
  var button = document.querySelector(".lesson-progress button.finish");
  if (button) {
    button.addEventListener("click", function () {
      if (!finished && button.getAttribute("aria-pressed") === "true") {
        api.LMSSetValue("cmi.core.lesson_status", "completed");
        finish("");
      }
    });
  }
  // quiz.js rewrites the score line after every answer: the LMS keeps the score even if the
  // learner leaves without finishing
  var line = document.querySelector("section.quiz .score");
  if (line && window.MutationObserver) {
    new MutationObserver(function () {
      if (!finished && report()) {
        api.LMSCommit("");
      }
    }).observe(line, {childList: true, characterData: true, subtree: true});
  }
  window.addEventListener("pagehide", function () {
    finish("suspend");
  });
}());
