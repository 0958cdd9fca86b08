// The UI's one stylesheet and one script, served by `strata serve` itself (no other origin, no
// build step). The pages work without the script: it only adds keys, the slider's label, the
// theme toggle, "since I last looked" and the notice of new events.

package enum WebAssets {
    package static let css = #"""
        :root { color-scheme: light dark; --bg: #fff; --fg: #1b1b1f; --muted: #5b5b66; --line: #d9d9e0; --accent: #0b57d0; --del: #fde7e9; --ins: #e3f5e1; --mark-del: #f5b5bd; --mark-ins: #a8dfa0; --banner: #fff4ce; --added: #188038; --removed: #c5221f; }
        @media (prefers-color-scheme: dark) { :root:not([data-theme=light]) { --bg: #15161a; --fg: #e8e8ee; --muted: #a3a3b0; --line: #33343c; --accent: #8ab4f8; --del: #4a1f24; --ins: #1d3b22; --mark-del: #7a2d36; --mark-ins: #2f6a38; --banner: #3d3514; --added: #81c995; --removed: #f28b82; } }
        :root[data-theme=dark] { --bg: #15161a; --fg: #e8e8ee; --muted: #a3a3b0; --line: #33343c; --accent: #8ab4f8; --del: #4a1f24; --ins: #1d3b22; --mark-del: #7a2d36; --mark-ins: #2f6a38; --banner: #3d3514; --added: #81c995; --removed: #f28b82; }
        * { box-sizing: border-box; }
        html { background: var(--bg); color: var(--fg); }
        body { margin: 0 auto; max-width: 72rem; padding: 0 1rem 2rem; font: 16px/1.45 system-ui, sans-serif; overflow-wrap: anywhere; }
        a { color: var(--accent); }
        :focus-visible { outline: 3px solid var(--accent); outline-offset: 2px; }
        .skip { position: absolute; left: -999px; } .skip:focus { left: 1rem; top: 1rem; background: var(--bg); padding: .5rem; }
        .top { display: flex; justify-content: space-between; align-items: center; gap: 1rem; border-bottom: 1px solid var(--line); padding: .5rem 0; flex-wrap: wrap; }
        .top nav { display: flex; gap: 1rem; flex-wrap: wrap; } .brand { font-weight: 700; }
        button, input, select { font: inherit; color: inherit; background: var(--bg); border: 1px solid var(--line); border-radius: 4px; padding: .25rem .5rem; max-width: 100%; }
        button { cursor: pointer; }
        .banner { background: var(--banner); padding: .5rem .75rem; margin: .75rem 0; border-radius: 4px; }
        .meta, .crumbs { color: var(--muted); }
        .filters, .slider, .compare { display: flex; flex-wrap: wrap; gap: .5rem 1rem; align-items: end; margin: 1rem 0; }
        .filters label, .slider label, .compare label { display: flex; flex-direction: column; font-size: .9rem; }
        fieldset { border: 1px solid var(--line); border-radius: 4px; }
        #slider { width: min(30rem, 80vw); }
        .scroll { overflow-x: auto; max-width: 100%; }
        table { border-collapse: collapse; width: 100%; }
        th, td { text-align: left; padding: .35rem .5rem; border-bottom: 1px solid var(--line); vertical-align: top; }
        thead th { font-size: .9rem; color: var(--muted); }
        td.num { text-align: right; font-variant-numeric: tabular-nums; }
        tr.focused { outline: 2px solid var(--accent); }
        tr.pending td, tr.pending th { font-style: italic; }
        .label { font-size: .8rem; border: 1px solid var(--line); border-radius: 3px; padding: 0 .3rem; color: var(--muted); }
        .kind { font-weight: 600; } .kind.removed { color: var(--removed); } .kind.added { color: var(--added); }
        .error { color: #c5221f; white-space: pre-wrap; }
        .facets { display: flex; flex-wrap: wrap; gap: 1rem; } .facets h2 { width: 100%; margin: 0; font-size: 1rem; }
        .facet h3 { font-size: .9rem; margin: .25rem 0; } .facet ul { margin: 0; padding-left: 1.2rem; } .count { color: var(--muted); }
        dl.fields { display: grid; grid-template-columns: minmax(6rem, max-content) 1fr; gap: .25rem 1rem; }
        dl.fields dt { color: var(--muted); } dl.fields dd { margin: 0; white-space: pre-wrap; }
        del { background: var(--del); text-decoration: none; } ins { background: var(--ins); text-decoration: none; }
        del mark { background: var(--mark-del); color: inherit; text-decoration: line-through; } ins mark { background: var(--mark-ins); color: inherit; }
        table.changes { margin: .5rem 0 1rem; } table.changes td { white-space: pre-wrap; }
        .timeline { padding-left: 1.2rem; } .timeline h3 { font-size: 1rem; margin: 1rem 0 .25rem; } .timeline li[aria-current] h3::after { content: " · now"; color: var(--muted); }
        .nav { margin: 0; font-size: .9rem; }
        .picture { max-width: 100%; height: auto; max-height: 20rem; }
        svg.chart { width: 100%; height: auto; max-height: 12rem; border: 1px solid var(--line); } svg.chart polyline { fill: none; stroke: var(--accent); stroke-width: 2; }
        .pager { margin: 1rem 0; display: flex; gap: 1rem; }
        footer { margin-top: 2rem; border-top: 1px solid var(--line); padding-top: .5rem; font-size: .9rem; }
        code { font-size: .85rem; }
        .pair { display: grid; grid-template-columns: repeat(auto-fit, minmax(min(100%, 22rem), 1fr)); gap: 1rem; }
        pre.body { overflow: auto; max-height: 30rem; max-width: 100%; border: 1px solid var(--line); padding: .5rem; white-space: pre-wrap; }
        """#

    package static let js = #"""
        "use strict";
        // What went wrong on the page (scripts, the content security policy), for the browser tests
        // and for anyone who opens the console.
        (function () {
          const root = document.documentElement;
          const note = (what) => { root.dataset.errors = ((root.dataset.errors || "") + what + "\n").slice(-2000); };
          window.addEventListener("error", (e) => note("error: " + e.message));
          document.addEventListener("securitypolicyviolation", (e) => note("csp: " + e.violatedDirective + " " + e.blockedURI));

          // Light or dark, remembered; the system's choice until the button is pressed.
          const theme = document.getElementById("theme");
          const apply = (t) => { if (t) root.dataset.theme = t; if (theme) { theme.setAttribute("aria-pressed", String(root.dataset.theme === "dark")); theme.textContent = root.dataset.theme === "dark" ? "Light" : "Dark"; } };
          try { apply(localStorage.getItem("strata-theme")); } catch (_) {}
          if (theme) theme.addEventListener("click", () => {
            const dark = root.dataset.theme ? root.dataset.theme === "dark" : matchMedia("(prefers-color-scheme: dark)").matches;
            const next = dark ? "light" : "dark";
            apply(next);
            try { localStorage.setItem("strata-theme", next); } catch (_) {}
          });

          // Keys: / to the filter, j and k through the rows, Enter opens, [ and ] previous and next change.
          let row = -1;
          const rows = () => Array.from(document.querySelectorAll("table.rows tbody tr"));
          document.addEventListener("keydown", (e) => {
            const t = e.target;
            if (e.ctrlKey || e.metaKey || e.altKey || (t && (t.tagName === "INPUT" || t.tagName === "SELECT" || t.tagName === "TEXTAREA"))) return;
            const all = rows();
            if (e.key === "/") { const f = document.getElementById("filter"); if (f) { e.preventDefault(); f.focus(); } }
            else if ((e.key === "j" || e.key === "k") && all.length) {
              if (all[row]) all[row].classList.remove("focused");
              row = Math.max(0, Math.min(all.length - 1, row + (e.key === "j" ? 1 : -1)));
              all[row].classList.add("focused");
              all[row].scrollIntoView({ block: "nearest" });
              const a = all[row].querySelector("a"); if (a) a.focus({ preventScroll: true });
            } else if (e.key === "Enter" && all[row]) { const a = all[row].querySelector("a"); if (a && document.activeElement !== a) a.click(); }
            else if (e.key === "[" || e.key === "]") {
              const current = document.querySelector(location.hash ? location.hash : ".timeline li") || document;
              const a = current.querySelector(e.key === "[" ? "a[rel=prev]" : "a[rel=next]") || document.querySelector(e.key === "[" ? "a[rel=prev]" : "a[rel=next]");
              if (a) a.click();
            }
          });

          // The slider: its label follows it, and letting go shows that point.
          const slider = document.getElementById("slider");
          if (slider) {
            const points = slider.dataset.points.split(" "), times = slider.dataset.times.split(" ");
            const labels = points.map((seq, i) => "seq " + seq + " · " + new Date(Number(times[i]) * 1000).toISOString().replace("T", " ").slice(0, 19) + " UTC");
            const label = document.getElementById("slider-label");
            const form = slider.form;
            const hidden = document.createElement("input");
            hidden.type = "hidden"; hidden.name = "as_of";
            slider.addEventListener("input", () => { label.textContent = labels[slider.value]; });
            slider.addEventListener("change", () => {
              slider.removeAttribute("name");
              hidden.value = points[slider.value];
              form.appendChild(hidden);
              const date = form.querySelector("input[name=date]"); if (date) date.disabled = true;
              form.submit();
            });
          }

          // Since I last looked: the head this page showed, remembered per source.
          const since = document.getElementById("since");
          if (since) {
            const key = "strata-seen-" + since.dataset.source;
            let seen = null;
            try { seen = localStorage.getItem(key); localStorage.setItem(key, since.dataset.head); } catch (_) {}
            if (seen) since.href = since.href.split("?")[0] + "?from=" + encodeURIComponent(seen); else since.hidden = true;
          }

          // A page showing now says when new events land, without moving the reader.
          const live = document.body.dataset.live;
          if (live && window.EventSource) {
            const source = new EventSource(live);
            // Closed when the page goes: a browser holds six connections to a host, and streams
            // left open by pages gone would starve the next pages.
            window.addEventListener("pagehide", () => source.close());
            const types = ["FetchCompleted", "FetchFailed", "ListNotModified", "DetailFetched", "SourceDefined", "SourceChanged", "ItemForgotten", "ItemPatchedLocally", "ExchangeRecorded"];
            for (const t of types) source.addEventListener(t, () => { const n = document.getElementById("live-notice"); if (n) n.hidden = false; });
          }
        })();
        """#
}
