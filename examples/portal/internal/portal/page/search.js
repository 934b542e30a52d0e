// The search boxes of the example portal. Each box asks
// /autocomplete/NAME?q= as the user types, with at most one request in
// flight: text typed meanwhile is sent when the answer comes, so the
// results always end with those of the text in the box. On 429 the box
// shows the wait the portal asks for in Retry-After, sends nothing until it
// has passed, then asks again for the text in the box.
//
// Each box's element carries its state for people and tests alike:
// data-state is "idle", "asking", "waiting" (over the limit) or "failed",
// and while waiting data-retry-after holds the seconds of Retry-After.
"use strict";

(function () {
  // minWait is the shortest wait, in seconds, after a 429: the wait of one
  // without a readable Retry-After, or with one of 0 or a date past, so
  // that a box never asks again at once.
  var minWait = 1;

  // retryAfterSeconds reads Retry-After, delay-seconds or an HTTP date, as
  // whole seconds, at least minWait.
  function retryAfterSeconds(value, now) {
    var seconds = minWait;
    if (value !== null && /^[0-9]+$/.test(value.trim())) {
      seconds = parseInt(value.trim(), 10);
    } else if (value !== null && !isNaN(Date.parse(value))) {
      seconds = Math.ceil((Date.parse(value) - now) / 1000);
    }
    return Math.max(minWait, seconds);
  }

  function SearchBox(el) {
    this.el = el;
    this.name = el.dataset.box;
    this.input = el.querySelector("input");
    this.status = el.querySelector(".status");
    this.results = el.querySelector(".results");
    this.inFlight = false;
    this.pending = false; // the text changed since it was last sent
    this.waiting = false;
    this.input.addEventListener("input", this.typed.bind(this));
  }

  SearchBox.prototype.setState = function (state, message) {
    this.el.dataset.state = state;
    this.status.textContent = message;
  };

  SearchBox.prototype.typed = function () {
    this.pending = true;
    this.ask();
  };

  // ask sends the text in the box, unless a request is in flight, the box
  // is waiting, or the text was already sent.
  SearchBox.prototype.ask = function () {
    if (this.inFlight || this.waiting || !this.pending) {
      return;
    }
    this.pending = false;
    this.inFlight = true;
    this.setState("asking", "Searching\u2026");
    var url = "/autocomplete/" + encodeURIComponent(this.name) + "?q=" + encodeURIComponent(this.input.value);
    var box = this;
    fetch(url, { headers: { Accept: "application/json" }, credentials: "same-origin" })
      .then(function (resp) {
        if (resp.status === 429) {
          box.wait(retryAfterSeconds(resp.headers.get("Retry-After"), Date.now()));
          return null;
        }
        if (!resp.ok) {
          throw new Error("HTTP " + resp.status);
        }
        return resp.json().then(function (body) {
          box.show(body.results || []);
        });
      })
      .catch(function (err) {
        box.results.replaceChildren();
        box.setState("failed", "Search failed: " + err.message);
      })
      .finally(function () {
        box.inFlight = false;
        box.ask();
      });
  };

  SearchBox.prototype.show = function (results) {
    var items = results.map(function (r) {
      var li = document.createElement("li");
      li.dataset.id = r.id;
      li.textContent = r.label;
      return li;
    });
    this.results.replaceChildren.apply(this.results, items);
    this.setState("idle", results.length === 0 ? "No matches." : "");
  };

  // wait stops the box asking for seconds, counting them down, then asks
  // again for the text in the box: the refused text was never searched.
  SearchBox.prototype.wait = function (seconds) {
    var box = this;
    var end = performance.now() + seconds * 1000;
    box.waiting = true;
    box.pending = true;
    box.el.dataset.retryAfter = String(seconds);
    function tell() {
      var left = Math.max(0, Math.ceil((end - performance.now()) / 1000));
      box.setState("waiting", "Too many searches: the portal asks to wait " + seconds +
        " s (Retry-After). Searching again in " + left + " s.");
    }
    tell();
    var ticker = setInterval(tell, 250);
    setTimeout(function () {
      clearInterval(ticker);
      box.waiting = false;
      delete box.el.dataset.retryAfter;
      box.setState("idle", "");
      box.ask();
    }, seconds * 1000);
  };

  document.querySelectorAll("[data-box]").forEach(function (el) {
    new SearchBox(el);
  });
})();
