// A learner's progress, kept in this browser's localStorage and never sent anywhere.
// One key per course, "stay:progress:<slug>", holding
//   {"v": 1, "opened": [lesson ids], "finished": [lesson ids], "quiz": {item id: answer},
//    "exercises": [exercise ids], "last": "<lesson page>.html" or null}
// where an answer is the chosen option's index (multiple choice) or the typed text.
// The stored value is untrusted (edited by hand, written by an older viewer, cut short
// by a full quota): load() keeps only well-formed entries, within bounds, and treats
// anything else as no progress; every page applies only the ids it shows. No storage
// at all (private mode, blocked cookies) means no progress, never an error.
// Exposes window.stayProgress (load, save, clear, add, remove, watch) for quiz.js.
// Every save is made to the value stored at that moment, so two tabs never erase each
// other's progress, and a lesson page's controls follow what another tab stores.
"use strict";
(function () {
  var VERSION = 1;
  var MAX_CHARS = 200000; // a value longer than this was not written by this script
  var MAX_ENTRIES = 5000; // per list, and answers per course
  var MAX_ANSWER = 4000; // characters of one typed answer
  var MAX_OPTION = 100; // an option index past this names no option of any quiz
  var MAX_TITLE = 300; // characters of a lesson's title a continue link shows
  var ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$/;
  var PAGE = /^[A-Za-z0-9][A-Za-z0-9._-]{0,199}\.html$/;

  function key(slug) {
    return "stay:progress:" + slug;
  }

  function empty() {
    return {v: VERSION, opened: [], finished: [], quiz: Object.create(null), exercises: [], last: null};
  }

  function storage() {
    try {
      return window.localStorage || null; // reading the property itself throws where storage is blocked
    } catch (e) {
      return null;
    }
  }

  function ids(value) {
    var kept = [];
    if (!Array.isArray(value)) {
      return kept;
    }
    for (var i = 0; i < value.length && kept.length < MAX_ENTRIES; i++) {
      if (typeof value[i] === "string" && ID.test(value[i]) && kept.indexOf(value[i]) < 0) {
        kept.push(value[i]);
      }
    }
    return kept;
  }

  function answers(value) {
    var kept = Object.create(null);
    if (!value || typeof value !== "object" || Array.isArray(value)) {
      return kept;
    }
    var names = Object.keys(value).slice(0, MAX_ENTRIES);
    for (var i = 0; i < names.length; i++) {
      var answer = value[names[i]];
      var option = typeof answer === "number" && Math.floor(answer) === answer && answer >= 0 && answer < MAX_OPTION;
      var text = typeof answer === "string" && answer.length > 0 && answer.length <= MAX_ANSWER;
      if (ID.test(names[i]) && (option || text)) {
        kept[names[i]] = answer;
      }
    }
    return kept;
  }

  function read(slug) {
    // the stored progress; null where a value is stored but damaged (too long, not JSON,
    // another version), which load() counts as none and a live page leaves unapplied
    var state = empty();
    var store = storage();
    var raw = null;
    var data = null;
    if (!store || !ID.test(slug)) {
      return state;
    }
    try {
      raw = store.getItem(key(slug));
      if (raw === null) {
        return state; // nothing stored: no progress
      }
      data = typeof raw === "string" && raw.length <= MAX_CHARS ? JSON.parse(raw) : null;
    } catch (e) {
      return null; // unreadable, or not JSON
    }
    if (!data || typeof data !== "object" || Array.isArray(data) || data.v !== VERSION) {
      return null;
    }
    state.opened = ids(data.opened);
    state.finished = ids(data.finished);
    state.exercises = ids(data.exercises);
    state.quiz = answers(data.quiz);
    state.last = typeof data.last === "string" && PAGE.test(data.last) ? data.last : null;
    return state;
  }

  function load(slug) {
    return read(slug) || empty();
  }

  function watch(slug, apply) {
    // progress changed in another tab (the event reaches only the other pages of this
    // origin; a null key is a clear() of the whole storage): apply(state) with what is
    // stored now, read as load() reads it; a damaged value is not applied, so the page
    // keeps what it shows rather than forgetting it
    window.addEventListener("storage", function (event) {
      if ((event.key !== null && event.key !== key(slug)) || (event.storageArea && event.storageArea !== storage())) {
        return;
      }
      var state = read(slug);
      if (state) {
        apply(state);
      }
    });
  }

  function save(slug, state) {
    var store = storage();
    var text = JSON.stringify(state);
    if (text.length > MAX_CHARS) {
      return false; // load() would throw away a longer value, and every answer with it: keep the last that fits
    }
    try {
      store.setItem(key(slug), text);
      return true;
    } catch (e) {
      return false; // no storage, or the quota is full: the page goes on without keeping it
    }
  }

  function clear(slug) {
    try {
      storage().removeItem(key(slug));
    } catch (e) {
      // nothing stored, nothing to clear
    }
  }

  function add(list, id) {
    if (list.indexOf(id) < 0) {
      list.push(id);
    }
  }

  function remove(list, id) {
    var at = list.indexOf(id);
    if (at >= 0) {
      list.splice(at, 1);
    }
  }

  function reveal(element) {
    // the controls that only work with script are rendered hidden, inside a <p hidden>
    element.hidden = false;
    if (element.parentElement && element.parentElement.hidden) {
      element.parentElement.hidden = false;
    }
  }

  function lessonsOf(bar) {
    return (bar.getAttribute("data-lessons") || "").split(",").filter(function (id) {
      return ID.test(id);
    });
  }

  function count(list, known) {
    return known.filter(function (id) {
      return list.indexOf(id) >= 0;
    }).length;
  }

  function fillBar(bar) {
    var lessons = lessonsOf(bar);
    var slug = bar.getAttribute("data-course") || "";
    var state = load(slug);
    var finished = count(state.finished, lessons);
    var opened = count(state.opened, lessons);
    var title = bar.getAttribute("data-title");
    var meter = document.createElement("progress");
    var text = document.createElement("p");
    meter.max = Math.max(lessons.length, 1);
    meter.value = finished;
    // a listing has a bar a course: each is named by its course, and described by its counts
    // in words (a screen reader would otherwise read a bare percentage; Chromium ignores
    // aria-valuetext on a <progress>)
    meter.setAttribute("aria-label", title ? "Lessons finished: " + title : "Lessons finished");
    text.className = "progress-text";
    text.textContent = finished + " of " + lessons.length + " lessons finished; " + opened + " opened.";
    if (ID.test(slug)) {
      text.id = "progress-of-" + slug;
      meter.setAttribute("aria-describedby", text.id);
    }
    bar.replaceChildren(meter, text);
  }

  function lessonTable(link) {
    // the lessons of the course, as the page rendered them: [{"id", "page", "title"}]
    var raw = link.getAttribute("data-lessons") || "";
    var table = null;
    var kept = [];
    try {
      table = raw.length <= MAX_CHARS ? JSON.parse(raw) : null;
    } catch (e) {
      return kept;
    }
    if (!Array.isArray(table)) {
      return kept;
    }
    for (var i = 0; i < table.length && kept.length < MAX_ENTRIES; i++) {
      var entry = table[i];
      if (entry && typeof entry === "object" && typeof entry.id === "string" && ID.test(entry.id) &&
          typeof entry.page === "string" && PAGE.test(entry.page) &&
          typeof entry.title === "string" && entry.title.trim()) {
        kept.push({id: entry.id, page: entry.page, title: entry.title.trim().slice(0, MAX_TITLE)});
      }
    }
    return kept;
  }

  function fillContinue(link) {
    var last = load(link.getAttribute("data-course") || "").last;
    var lesson = last ? lessonTable(link).filter(function (entry) {
      return entry.page === last;
    })[0] : null;
    if (!lesson) {
      link.hidden = true; // nothing stored, or a page that is no lesson of this course
      return;
    }
    // beside the link's own target: the course index, or <slug>/index.html on a listing
    var own = link.getAttribute("href") || "";
    link.href = own.slice(0, own.lastIndexOf("/") + 1) + lesson.page;
    link.textContent = "Continue where you left off: " + lesson.title; // text, never markup
    link.hidden = false;
  }

  function refresh() {
    document.querySelectorAll(".progress[data-course]").forEach(fillBar);
    document.querySelectorAll("a.continue[data-course]").forEach(fillContinue);
  }

  function lessonPage(host) {
    var slug = host.getAttribute("data-course") || "";
    var lesson = host.getAttribute("data-lesson") || "";
    var page = host.getAttribute("data-page") || "";
    if (!ID.test(lesson)) {
      return;
    }
    var state = load(slug);
    add(state.opened, lesson); // opened: its page loaded
    state.last = PAGE.test(page) ? page : state.last;
    save(slug, state);

    var button = host.querySelector("button.finish");
    var note = host.querySelector(".finished-note");
    function show(finished) {
      button.setAttribute("aria-pressed", finished ? "true" : "false");
      if (note) {
        note.textContent = finished ? "You finished this lesson." : "";
      }
    }
    if (button) {
      reveal(button);
      show(state.finished.indexOf(lesson) >= 0);
      button.addEventListener("click", function () {
        // the change the learner asks for is the one the button shows; it is made to what
        // is stored now (another tab, or quiz.js, may have written since), never by
        // writing this page's copy back
        var finished = button.getAttribute("aria-pressed") !== "true";
        var now = load(slug);
        (finished ? add : remove)(now.finished, lesson);
        save(slug, now);
        show(finished);
      });
    }

    var boxes = [];
    document.querySelectorAll("input[type=checkbox][data-exercise]").forEach(function (box) {
      var id = box.getAttribute("data-exercise") || "";
      if (!ID.test(id)) {
        return;
      }
      boxes.push(box);
      reveal(box.closest(".exercise-done") || box);
      box.checked = state.exercises.indexOf(id) >= 0;
      box.addEventListener("change", function () {
        var now = load(slug);
        (box.checked ? add : remove)(now.exercises, id);
        save(slug, now);
      });
    });

    watch(slug, function (now) {
      if (button) {
        show(now.finished.indexOf(lesson) >= 0);
      }
      boxes.forEach(function (box) {
        box.checked = now.exercises.indexOf(box.getAttribute("data-exercise") || "") >= 0;
      });
    });
  }

  function resetButton(button) {
    var slug = button.getAttribute("data-course") || "";
    reveal(button);
    button.addEventListener("click", function () {
      if (window.confirm("Forget your progress in this course (lessons, quiz answers, exercises) in this browser?")) {
        clear(slug);
        refresh();
      }
    });
  }

  window.stayProgress = {load: load, save: save, clear: clear, add: add, remove: remove, watch: watch};

  document.querySelectorAll(".lesson-progress[data-course]").forEach(lessonPage);
  document.querySelectorAll("button.reset-progress[data-course]").forEach(resetButton);
  refresh();
  // back and forward restore a page from the cache without running this again
  window.addEventListener("pageshow", function (event) {
    if (event.persisted) {
      refresh();
    }
  });
  // a lesson finished in another tab: this page's bars follow (the event reaches only the
  // other pages of this origin; a null key is a clear() of the whole storage)
  window.addEventListener("storage", function (event) {
    if (event.key === null || event.key.indexOf(key("")) === 0) {
      refresh();
    }
  });
}());
