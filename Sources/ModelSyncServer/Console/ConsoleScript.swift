extension ConsoleText {
    /// The console's script. Every value from the server reaches the page as text
    /// (`textContent`, text nodes, input values): never as HTML, which the page's policy (Trusted
    /// Types) refuses anyway. The token lives in a variable only, and goes out as `Authorization`.
    static let script = #"""
        "use strict";
        (function () {
          const settings = document.body.dataset;
          const openServer = settings.access === "open";
          const accountsCollection = settings.accounts || "users";
          let token = null;
          const $ = (id) => document.getElementById(id);

          // Makes an element; strings among the children become text nodes, never HTML.
          function el(tag, attributes, ...children) {
            const node = document.createElement(tag);
            for (const [name, value] of Object.entries(attributes || {})) {
              if (value === undefined || value === null || value === false) continue;
              if (name === "text") node.textContent = String(value);
              else if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
              else node.setAttribute(name, value === true ? "" : String(value));
            }
            for (const child of children) {
              if (child === null || child === undefined) continue;
              node.append(typeof child === "string" ? document.createTextNode(child) : child);
            }
            return node;
          }

          function say(id, text, kind) {
            const node = $(id);
            node.textContent = text || "";
            node.classList.toggle("bad", kind === "bad");
            node.classList.toggle("good", kind === "good");
          }

          // A value as one line of text: strings as they are, the rest as JSON.
          function shown(value) {
            if (value === undefined) return "";
            if (typeof value === "string") return value;
            return JSON.stringify(value);
          }

          class APIError extends Error {
            constructor(status, message, body, response) {
              super(message);
              this.status = status;
              this.body = body;
              this.response = response;
            }
          }

          // A request to the server's API, with the token; JSON in and out.
          async function api(method, path, options) {
            const headers = new Headers((options && options.headers) || {});
            headers.set("Accept", "application/json");
            if (token) headers.set("Authorization", "Bearer " + token);
            const init = { method, headers, cache: "no-store", credentials: "omit" };
            if (options && options.body !== undefined) {
              headers.set("Content-Type", "application/json");
              init.body = JSON.stringify(options.body);
            }
            const response = await fetch(path, init);
            let body = null;
            const text = await response.text();
            if (text) { try { body = JSON.parse(text); } catch (error) { body = text; } }
            if (!response.ok) {
              const message = body && typeof body === "object" && typeof body.error === "string" ? body.error : response.status + " " + response.statusText;
              throw new APIError(response.status, message, body, response);
            }
            return { body, response };
          }

          function described(error) {
            if (error instanceof APIError) return error.status + ": " + error.message;
            return String(error && error.message ? error.message : error);
          }

          // A list's pages: "<prefix>-page-label", "<prefix>-previous" and "<prefix>-next" follow
          // state.page and state.total; the form starts over at page 1.
          function showPager(prefix, state, perPageCount) {
            const pages = Math.max(1, Math.ceil(state.total / perPageCount));
            $(prefix + "-page-label").textContent = "Page " + state.page + " of " + pages;
            $(prefix + "-previous").disabled = state.page <= 1;
            $(prefix + "-next").disabled = state.page >= pages;
          }

          function wirePager(prefix, formID, state, load) {
            $(formID).addEventListener("submit", (event) => { event.preventDefault(); state.page = 1; load(); });
            $(prefix + "-previous").addEventListener("click", () => { state.page = Math.max(1, state.page - 1); load(); });
            $(prefix + "-next").addEventListener("click", () => { state.page += 1; load(); });
          }

          // --- Signing in ---

          function claims(jwt) {
            try {
              const part = jwt.split(".")[1].replace(/-/g, "+").replace(/_/g, "/");
              return JSON.parse(decodeURIComponent(Array.from(atob(part), (c) => "%" + c.charCodeAt(0).toString(16).padStart(2, "0")).join("")));
            } catch (error) {
              return {};
            }
          }

          // The token's holder may use the console when the API lets it read the collections'
          // counts (admins only under access rules): the page refuses anyone the API refuses.
          async function enter(candidate) {
            token = candidate;
            try {
              const counts = await api("GET", "/_admin/collections");
              const who = token ? claims(token) : {};
              $("who").textContent = token ? "Signed in as user " + shown(who.sub) + (who.role ? " (" + shown(who.role) + ")" : "") : "No sign-in: this server has no access rules";
              $("sign-in").hidden = true;
              $("app").hidden = false;
              $("sign-out").hidden = !token;
              say("sign-in-status", "");
              showCollections(counts.body.collections);
              $("main").focus();
            } catch (error) {
              token = null;
              const refusal = error instanceof APIError && (error.status === 401 || error.status === 403)
                ? "Refused: the console is for admins only, and the server did not accept this account as one (" + described(error) + ")."
                : "Could not sign in: " + described(error);
              say("sign-in-status", refusal, "bad");
              $("app").hidden = true;
              $("sign-in").hidden = openServer;
            }
          }

          $("login-form").addEventListener("submit", async (event) => {
            event.preventDefault();
            say("sign-in-status", "Signing in…");
            try {
              const answer = await api("POST", "/login", { body: { email: $("login-email").value, password: $("login-password").value } });
              $("login-password").value = "";
              await enter(answer.body.accessToken);
            } catch (error) {
              say("sign-in-status", "Could not sign in: " + described(error), "bad");
            }
          });

          $("token-form").addEventListener("submit", async (event) => {
            event.preventDefault();
            const text = $("token-text").value.trim().replace(/^Bearer\s+/i, "");
            $("token-text").value = "";
            if (!text) { say("sign-in-status", "Paste a token first.", "bad"); return; }
            await enter(text);
          });

          $("sign-out").addEventListener("click", () => {
            token = null;
            stopFeed();
            stopHealth();
            $("app").hidden = true;
            $("sign-in").hidden = false;
            $("sign-out").hidden = true;
            $("who").textContent = "";
            say("sign-in-status", "Signed out: the token is forgotten (it stays valid until it expires).");
            $("login-email").focus();
          });

          // --- Views ---

          for (const button of document.querySelectorAll("[data-view]")) {
            button.addEventListener("click", () => {
              for (const other of document.querySelectorAll("[data-view]")) {
                const chosen = other === button;
                other.setAttribute("aria-pressed", String(chosen));
                $(other.dataset.view).hidden = !chosen;
              }
              if (button.dataset.view === "users-view" && !usersLoaded) loadUsers();
              if (button.dataset.view === "rules-view" && !rulesLoaded) loadRules();
              if (button.dataset.view === "feed-view") loadSync();
              if (button.dataset.view === "health-view") startHealth(); else stopHealth();
            });
          }

          // --- Collections and records ---

          const browse = { collection: null, page: 1, total: 0 };

          // GET /_admin/collections: each collection's row count, counted by the server (not read).
          function showCollections(entries) {
            const body = $("collections").tBodies[0];
            body.replaceChildren();
            for (const entry of entries || []) {
              const name = shown(entry.name);
              const isCollection = entry.kind === "collection";
              const open = el("button", { type: "button", text: name, "aria-label": "Browse " + name, onclick: () => openCollection(name, isCollection) });
              body.append(el("tr", {},
                el("td", {}, open),
                el("td", { text: isCollection ? "collection" : "singular resource" }),
                el("td", { class: "number", "data-rows": name, text: isCollection ? shown(entry.rows) : "—" })));
            }
            say("collections-status", (entries || []).length + " collections and resources.");
          }

          async function refreshCollections() {
            try {
              showCollections((await api("GET", "/_admin/collections")).body.collections);
            } catch (error) {
              say("collections-status", described(error), "bad");
            }
          }
          $("refresh-collections").addEventListener("click", refreshCollections);

          function openCollection(name, isCollection) {
            browse.collection = name;
            browse.page = 1;
            $("records-title").textContent = isCollection ? "Records of " + name : name;
            $("records-section").hidden = false;
            $("editor").hidden = true;
            $("new-record").hidden = !isCollection;
            if (isCollection) loadRecords();
            else openSingular(name);
          }

          function listQuery(filters, page, perPage, sort) {
            const query = new URLSearchParams(filters.trim().replace(/^\?/, ""));
            for (const reserved of ["_page", "_per_page", "_limit", "_start", "_end"]) query.delete(reserved);
            if (sort) { query.delete("_sort"); query.set("_sort", sort); }
            query.set("_page", String(page));
            query.set("_per_page", String(perPage));
            return query.toString();
          }

          function perPage() {
            const value = parseInt($("query-per-page").value, 10);
            return value > 0 ? Math.min(value, 500) : 20;
          }

          async function loadRecords() {
            const name = browse.collection;
            say("records-status", "Loading…");
            try {
              const path = "/" + encodeURIComponent(name) + "?" + listQuery($("query-filters").value, browse.page, perPage(), $("query-sort").value.trim());
              const { body, response } = await api("GET", path);
              browse.total = parseInt(response.headers.get("X-Total-Count") || "0", 10);
              showRecords(Array.isArray(body) ? body : []);
            } catch (error) {
              showRecords([]);
              say("records-status", described(error), "bad");
            }
          }

          function showRecords(records) {
            const table = $("records");
            const columns = [];
            for (const record of records) for (const key of Object.keys(record)) if (!columns.includes(key) && columns.length < 8) columns.push(key);
            if (columns.includes("id")) { columns.splice(columns.indexOf("id"), 1); columns.unshift("id"); }
            table.tHead.replaceChildren(el("tr", {}, ...columns.map((c) => el("th", { scope: "col", text: c })), el("th", { scope: "col", text: "Actions" })));
            const body = table.tBodies[0];
            body.replaceChildren();
            for (const record of records) {
              const id = shown(record.id);
              body.append(el("tr", {},
                ...columns.map((c) => el("td", { text: shown(record[c]) })),
                el("td", {}, el("button", { type: "button", text: "Edit", "aria-label": "Edit record " + id, onclick: () => openRecord(browse.collection, id) }))));
            }
            showPager("records", browse, perPage());
            say("records-status", browse.total + " records match.");
          }

          wirePager("records", "query-form", browse, loadRecords);

          // --- The editor: one field per member, If-Match on every write ---

          const editing = { collection: null, id: null, etag: null, singular: false, confirmDelete: false };

          function fieldRow(name, value) {
            const id = "field-" + Math.random().toString(36).slice(2);
            const isText = typeof value === "string";
            const input = isText
              ? el("input", { id, "data-field": name, "data-kind": "text", autocomplete: "off", spellcheck: "false" })
              : el("textarea", { id, "data-field": name, "data-kind": "json", rows: "1", autocomplete: "off", spellcheck: "false" });
            input.value = isText ? value : JSON.stringify(value);
            const error = el("p", { id: id + "-error", class: "field-error", "aria-live": "polite" });
            input.setAttribute("aria-describedby", error.id);
            if (name === "id" && editing.id !== null) input.readOnly = true;
            return el("div", { class: "field", "data-field-row": name },
              el("label", { for: id, text: name + (isText ? "" : " (JSON)") }), input, error);
          }

          function fillEditor(record) {
            const fields = $("editor-fields");
            fields.replaceChildren();
            for (const [name, value] of Object.entries(record || {})) fields.append(fieldRow(name, value));
            editing.confirmDelete = false;
            $("delete-record").textContent = "Delete";
            $("delete-record").hidden = editing.id === null || editing.singular;
          }

          function showEditor(title) {
            $("editor-title").textContent = title;
            $("editor").hidden = false;
            say("editor-status", "");
            $("editor-title").focus();
          }

          async function openRecord(collection, id) {
            try {
              const { body, response } = await api("GET", "/" + encodeURIComponent(collection) + "/" + encodeURIComponent(id));
              Object.assign(editing, { collection, id, etag: response.headers.get("ETag"), singular: false });
              fillEditor(body);
              showEditor("Record " + id + " of " + collection);
            } catch (error) {
              say("records-status", described(error), "bad");
            }
          }

          async function openSingular(name) {
            $("records-section").hidden = true;
            try {
              const { body, response } = await api("GET", "/" + encodeURIComponent(name));
              Object.assign(editing, { collection: name, id: null, etag: response.headers.get("ETag"), singular: true });
              fillEditor(body);
              showEditor(name);
            } catch (error) {
              say("collections-status", described(error), "bad");
            }
          }

          $("new-record").addEventListener("click", () => {
            Object.assign(editing, { collection: browse.collection, id: null, etag: null, singular: false });
            const template = {};
            const header = $("records").tHead.rows[0];
            if (header) for (const cell of Array.from(header.cells).slice(0, -1)) if (cell.textContent !== "id") template[cell.textContent] = "";
            fillEditor(template);
            showEditor("New record in " + browse.collection);
          });

          $("add-field").addEventListener("click", () => {
            const name = $("new-field-name").value.trim();
            if (!name) return;
            $("editor-fields").append(fieldRow(name, ""));
            $("new-field-name").value = "";
            $("editor-fields").lastElementChild.querySelector("input, textarea").focus();
          });

          // The form's record; null (with each bad field marked) when a JSON field does not parse.
          function editedRecord() {
            const record = {};
            let valid = true;
            for (const input of $("editor-fields").querySelectorAll("[data-field]")) {
              const error = $(input.getAttribute("aria-describedby"));
              error.textContent = "";
              input.removeAttribute("aria-invalid");
              if (input.dataset.kind === "text") { record[input.dataset.field] = input.value; continue; }
              try {
                record[input.dataset.field] = input.value.trim() === "" ? null : JSON.parse(input.value);
              } catch (parseError) {
                valid = false;
                error.textContent = "Not valid JSON: write a number, true, false, null, \"text\", [ … ] or { … }.";
                input.setAttribute("aria-invalid", "true");
              }
            }
            return valid ? record : null;
          }

          // A refusal's message, shown under each field it names too.
          function showWriteError(error) {
            let shownAtField = false;
            if (error instanceof APIError) {
              for (const input of $("editor-fields").querySelectorAll("[data-field]")) {
                if (error.message.includes(input.dataset.field) && input.dataset.field.length > 1) {
                  $(input.getAttribute("aria-describedby")).textContent = error.message;
                  input.setAttribute("aria-invalid", "true");
                  shownAtField = true;
                }
              }
            }
            say("editor-status", "Not saved: " + described(error) + (shownAtField ? " (see the field)" : ""), "bad");
          }

          $("editor-form").addEventListener("submit", async (event) => {
            event.preventDefault();
            const record = editedRecord();
            if (!record) { say("editor-status", "Not saved: a field is not valid (see the field).", "bad"); return; }
            const base = "/" + encodeURIComponent(editing.collection);
            try {
              let answer;
              if (editing.singular) {
                answer = await api("PUT", base, { body: record, headers: editing.etag ? { "If-Match": editing.etag } : {} });
              } else if (editing.id === null) {
                if (record.id === null || record.id === "") delete record.id;
                answer = await api("POST", base, { body: record });
                editing.id = shown(answer.body.id);
              } else {
                answer = await api("PUT", base + "/" + encodeURIComponent(editing.id), { body: record, headers: { "If-Match": editing.etag } });
              }
              editing.etag = answer.response.headers.get("ETag");
              fillEditor(answer.body);
              say("editor-status", "Saved (version " + (editing.etag || "?") + ").", "good");
              if (!editing.singular) loadRecords();
            } catch (error) {
              if (error instanceof APIError && error.status === 412 && error.body && error.body.current) {
                editing.etag = error.response.headers.get("ETag");
                fillEditor(error.body.current);
                say("editor-status", "Not saved: someone changed this record since you opened it. The form now shows the current version (" + (editing.etag || "?") + "); make your edit again.", "bad");
                return;
              }
              showWriteError(error);
            }
          });

          $("delete-record").addEventListener("click", async () => {
            if (!editing.confirmDelete) {
              editing.confirmDelete = true;
              $("delete-record").textContent = "Confirm delete";
              say("editor-status", "Press Confirm delete to delete this record.");
              return;
            }
            try {
              await api("DELETE", "/" + encodeURIComponent(editing.collection) + "/" + encodeURIComponent(editing.id), { headers: { "If-Match": editing.etag } });
              $("editor").hidden = true;
              say("records-status", "Deleted record " + editing.id + ".", "good");
              loadRecords();
            } catch (error) {
              editing.confirmDelete = false;
              $("delete-record").textContent = "Delete";
              showWriteError(error);
            }
          });

          $("cancel-edit").addEventListener("click", () => { $("editor").hidden = true; $("records-title").focus(); });

          // --- Users ---

          let usersLoaded = false;
          const users = { page: 1, total: 0 };

          async function loadUsers() {
            usersLoaded = true;
            say("users-status", "Loading…");
            try {
              const path = "/" + encodeURIComponent(accountsCollection) + "?" + listQuery($("users-filters").value, users.page, 20, "");
              const { body, response } = await api("GET", path);
              users.total = parseInt(response.headers.get("X-Total-Count") || "0", 10);
              showUsers(Array.isArray(body) ? body : []);
            } catch (error) {
              say("users-status", described(error), "bad");
            }
          }

          function showUsers(accounts) {
            const body = $("users").tBodies[0];
            body.replaceChildren();
            for (const account of accounts) {
              const id = shown(account.id);
              const label = shown(account.email) || id;
              const roleID = "role-" + Math.random().toString(36).slice(2);
              const role = el("input", { id: roleID, autocomplete: "off", placeholder: "none", "aria-label": "Role of " + label });
              api("GET", "/_accounts/" + encodeURIComponent(id) + "/role").then(
                (answer) => { if (answer.body.role !== null && role.value === "") role.value = answer.body.role; },
                (error) => { if (error instanceof APIError && error.status === 404) role.placeholder = "no account"; });
              const setRole = el("button", { type: "button", text: "Set role", "aria-label": "Set the role of " + label, onclick: async () => {
                try {
                  const answer = await api("PUT", "/_accounts/" + encodeURIComponent(id) + "/role", { body: { role: role.value.trim() === "" ? null : role.value.trim() } });
                  say("users-status", "The role of " + label + " is now " + (answer.body.role === null ? "none" : answer.body.role) + ".", "good");
                } catch (error) {
                  say("users-status", "Role not set: " + described(error), "bad");
                }
              } });
              const endSessions = el("button", { type: "button", text: "End sessions", "aria-label": "End every session of " + label, onclick: async () => {
                try {
                  await api("POST", "/_accounts/" + encodeURIComponent(id) + "/logout");
                  say("users-status", label + " is signed out everywhere.", "good");
                } catch (error) {
                  say("users-status", "Sessions not ended: " + described(error), "bad");
                }
              } });
              const passwordID = "password-" + Math.random().toString(36).slice(2);
              const password = el("input", { id: passwordID, type: "password", autocomplete: "new-password", "aria-label": "New password for " + label });
              const resetPassword = el("button", { type: "button", text: "Reset password", "aria-label": "Reset the password of " + label, onclick: async () => {
                if (password.value === "") { say("users-status", "Type the new password of " + label + " first.", "bad"); password.focus(); return; }
                try {
                  await api("PUT", "/_accounts/" + encodeURIComponent(id) + "/password", { body: { newPassword: password.value } });
                  password.value = "";
                  say("users-status", "The password of " + label + " is reset, and its sessions ended.", "good");
                } catch (error) {
                  say("users-status", "Password not reset: " + described(error), "bad");
                }
              } });
              body.append(el("tr", {}, el("td", { text: id }), el("td", { text: shown(account.email) }),
                el("td", {}, el("div", { class: "row" }, role, setRole)), el("td", {}, endSessions),
                el("td", {}, el("div", { class: "row" }, password, resetPassword))));
            }
            showPager("users", users, 20);
            say("users-status", users.total + " accounts. Change a role (empty: none) and press Set role.");
          }

          wirePager("users", "users-form", users, loadUsers);

          // --- The live feed: /_changes/stream read with fetch, since EventSource sends no
          // Authorization header ---

          let feed = null;

          function stopFeed() {
            if (feed) { feed.stopped = true; feed.controller.abort(); }
            feed = null;
            $("feed-start").disabled = false;
            $("feed-stop").disabled = true;
          }

          // Whether a change passes the user filter: its row's owner field (as the rules name it)
          // holds the user. A deletion carries no row, so it shows only without the filter.
          function ownedByFilteredUser(change, state) {
            if (!state.user) return true;
            if (!change.record) return false;
            const field = (state.owners && state.owners[change.collection]) || "userId";
            return shown(change.record[field]) === state.user;
          }

          function showChange(event, state) {
            let change;
            try { change = JSON.parse(event.data); } catch (error) { return; }
            if (!ownedByFilteredUser(change, state)) return;
            const list = $("feed-events");
            const what = change.deleted ? "deleted" : "written";
            list.prepend(el("li", {},
              el("div", { class: "meta", text: "#" + shown(change.seq) + " " + shown(change.collection) + "/" + shown(change.id) + " " + what }),
              change.record ? el("pre", { text: JSON.stringify(change.record, null, 1) }) : null));
            while (list.children.length > 200) list.lastElementChild.remove();
          }

          async function follow(state) {
            const query = new URLSearchParams();
            if (state.collections) query.set("collections", state.collections);
            query.set("since", state.last || "now");
            const headers = { Accept: "text/event-stream" };
            if (token) headers.Authorization = "Bearer " + token;
            const response = await fetch("/_changes/stream?" + query.toString(), { headers, signal: state.controller.signal, cache: "no-store", credentials: "omit" });
            if (!response.ok) {
              let message = response.status + " " + response.statusText;
              try { message = response.status + ": " + (await response.json()).error; } catch (error) { /* the status says enough */ }
              throw new Error(message);
            }
            say("feed-status", "Following " + (state.collections || "every collection") + (state.user ? ", rows of user " + state.user : "") + ": changes appear below as they commit.", "good");
            $("feed-events").dataset.ready = "true";
            const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
            let buffer = "";
            let current = { data: [], id: null, event: "message" };
            for (;;) {
              const { value, done } = await reader.read();
              if (done) return;
              buffer += value;
              const lines = buffer.split(/\r\n|\r|\n/);
              buffer = lines.pop();
              for (const line of lines) {
                if (line === "") {
                  if (current.data.length) {
                    if (current.id !== null) state.last = current.id;
                    if (current.event === "change") showChange({ data: current.data.join("\n") }, state);
                  }
                  current = { data: [], id: null, event: "message" };
                } else if (!line.startsWith(":")) {
                  const colon = line.indexOf(":");
                  const field = colon < 0 ? line : line.slice(0, colon);
                  const text = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
                  if (field === "data") current.data.push(text);
                  else if (field === "id") current.id = text;
                  else if (field === "event") current.event = text;
                }
              }
            }
          }

          $("feed-form").addEventListener("submit", async (event) => {
            event.preventDefault();
            stopFeed();
            const state = { controller: new AbortController(), collections: $("feed-collections").value.trim(), user: $("feed-user").value.trim(), owners: null, last: null, stopped: false };
            feed = state;
            // The owner field of each collection, from the rules as loaded (userId without rules).
            if (state.user && !openServer) {
              try {
                const { body } = await api("GET", "/_access/rules");
                state.owners = {};
                for (const [name, rule] of Object.entries(body.rules)) state.owners[name] = rule.owner;
              } catch (error) { /* userId then */ }
            }
            $("feed-start").disabled = true;
            $("feed-stop").disabled = false;
            say("feed-status", "Connecting…");
            // Reconnects from the last event after a dropped stream, until stopped.
            while (!state.stopped) {
              try {
                await follow(state);
                if (!state.stopped) say("feed-status", "The stream ended; reconnecting…");
              } catch (error) {
                if (state.stopped) break;
                // A refusal is final: retrying would meet it again.
                if (error instanceof Error && /^(400|401|403|410)/.test(error.message)) {
                  stopFeed();
                  say("feed-status", "The stream was refused: " + described(error), "bad");
                  break;
                }
                say("feed-status", "The stream failed: " + described(error) + "; retrying in 5 seconds.", "bad");
              }
              await new Promise((resolve) => setTimeout(resolve, 5000));
            }
          });
          $("feed-stop").addEventListener("click", () => { stopFeed(); say("feed-status", "Stopped."); });

          // --- Sync: the open streams and the latest writes' answers (this server process's) ---

          async function loadSync() {
            try {
              const [streams, writes] = await Promise.all([api("GET", "/_admin/streams"), api("GET", "/_admin/writes")]);
              const streamRows = $("streams").tBodies[0];
              streamRows.replaceChildren(...streams.body.streams.map((stream) => el("tr", {},
                el("td", { text: stream.user === null ? "anonymous" : shown(stream.user) + (stream.role ? " (" + shown(stream.role) + ")" : "") }),
                el("td", { text: shown(stream.address) }),
                el("td", { text: new Date(stream.opened).toLocaleString() }),
                el("td", { text: stream.collections === null ? "all" : stream.collections.join(", ") }))));
              const writeRows = $("writes").tBodies[0];
              writeRows.replaceChildren(...writes.body.writes.map((write) => {
                const notes = [];
                if (write.replayed) notes.push("idempotent replay");
                if (write.conflict) notes.push(write.status === 412 ? "conflict: stale If-Match" : "conflict");
                if (write.batch) notes.push("in a batch");
                return el("tr", { class: write.conflict ? "conflict" : null },
                  el("td", { text: new Date(write.at).toLocaleTimeString() }),
                  el("td", { text: write.user === null ? "—" : shown(write.user) }),
                  el("td", { text: write.method + " " + shown(write.collection) + (write.id === null ? "" : "/" + shown(write.id)) }),
                  el("td", { class: "number", text: String(write.status) }),
                  el("td", { text: notes.join(", ") || "—" }));
              }));
              say("sync-status", streams.body.streams.length + " streams open; the latest " + writes.body.writes.length + " writes (at most " + writes.body.capacity + " kept).");
            } catch (error) {
              say("sync-status", described(error), "bad");
            }
          }
          $("sync-refresh").addEventListener("click", loadSync);
          $("feed-clear").addEventListener("click", () => { $("feed-events").replaceChildren(); });

          // --- Rules: as loaded, and why a user may or may not reach a row ---

          let rulesLoaded = false;

          async function loadRules() {
            rulesLoaded = true;
            try {
              const { body } = await api("GET", "/_access/rules");
              const rows = $("rules").tBodies[0];
              rows.replaceChildren();
              const entries = Object.entries(body.rules).sort(([a], [b]) => a.localeCompare(b));
              if (body.accountsRule) entries.push([body.accountsCollection + " (default)", body.accountsRule]);
              for (const [name, rule] of entries) {
                if (rule.mode === undefined) {
                  // The sharing form: a standing per operation, members and a parent.
                  const standings = ["list", "view", "create", "update", "delete"].map((operation) => operation + ": " + rule[operation]).join(", ");
                  const ties = [];
                  if (rule.members) ties.push("members in " + rule.members.collection + "." + rule.members.field + " (" + rule.members.user + ", " + rule.members.role + ")");
                  if (rule.parent) ties.push("parent " + rule.parent.collection + " by " + rule.parent.field);
                  rows.append(el("tr", {}, el("td", { text: name }), el("td", { text: standings }), el("td", { text: rule.owner || "—" }), el("td", { text: ties.join("; ") || "—" })));
                  continue;
                }
                const roles = Object.entries(rule.roles).map(([role, mode]) => role + ": " + mode).join(", ");
                rows.append(el("tr", {}, el("td", { text: name }), el("td", { text: rule.mode }), el("td", { text: rule.owner }), el("td", { text: roles || "—" })));
              }
              say("rules-status", "Accounts live in " + body.accountsCollection + ". A collection no rule names (and no *) is for admins only.");
            } catch (error) {
              say("rules-status", described(error), "bad");
            }
          }

          $("check-form").addEventListener("submit", async (event) => {
            event.preventDefault();
            const query = new URLSearchParams({ collection: $("check-collection").value.trim(), id: $("check-id").value.trim() });
            if ($("check-user").value.trim()) query.set("user", $("check-user").value.trim());
            if ($("check-role").value.trim()) query.set("role", $("check-role").value.trim());
            const result = $("check-result");
            try {
              const { body } = await api("GET", "/_access/check?" + query.toString());
              const who = body.user === null ? "An anonymous caller" : "User " + body.user + (body.role ? " (role " + body.role + ")" : "");
              if (body.standing !== undefined) {
                const needs = (operation) => body.operations[operation].needs;
                result.replaceChildren(
                  el("p", { id: "check-read", text: who + " stands as " + body.standing + " on " + body.collection + "/" + shown(body.id) + ": " + body.because + "." }),
                  el("p", { id: "check-write", text: (body.read ? "May read" : "May not read") + " (view needs " + needs("view") + "); " + (body.write ? "may update" : "may not update") + " (update needs " + needs("update") + ")." }));
                return;
              }
              result.replaceChildren(
                el("p", { id: "check-read", text: who + (body.read ? " may read " : " may not read ") + body.collection + "/" + shown(body.id) + ": " + body.reasons.read + "." }),
                el("p", { id: "check-write", text: who + (body.write ? " may write it: " : " may not write it: ") + body.reasons.write + "." }));
            } catch (error) {
              result.replaceChildren(el("p", { class: "status bad", text: described(error) }));
            }
          });

          // --- Health: the server's metrics, read every 5 seconds while the view is open ---

          const health = { timer: null, previous: null, series: { rate: [], p50: [], p99: [], active: [], streams: [] } };

          // Prometheus's text format: one sample per line, "name{label="value",…} number".
          function samples(text) {
            const parsed = [];
            for (const line of text.split("\n")) {
              const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/.exec(line);
              if (!match) continue;
              const labels = {};
              for (const label of (match[2] || "").matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[label[1]] = label[2];
              parsed.push({ name: match[1], labels, value: Number(match[3]) });
            }
            return parsed;
          }

          // Totals of one reading: requests, answers by status, latency buckets, requests in flight.
          function reading(list) {
            const result = { requests: 0, statuses: {}, buckets: {}, active: 0, time: Date.now() };
            for (const sample of list) {
              if (sample.name === "hb_requests") {
                result.requests += sample.value;
                const status = sample.labels.http_response_status_code || "?";
                result.statuses[status] = (result.statuses[status] || 0) + sample.value;
              } else if (sample.name === "http_server_request_duration_bucket") {
                const bound = sample.labels.le === "+Inf" ? Infinity : Number(sample.labels.le);
                result.buckets[bound] = (result.buckets[bound] || 0) + sample.value;
              } else if (sample.name === "http_server_active_requests") {
                result.active += sample.value;
              }
            }
            return result;
          }

          // The latency below which a share q of the interval's requests fell (linear within a bucket), in ms.
          function quantile(now, before, q) {
            const bounds = Object.keys(now.buckets).map(Number).sort((a, b) => a - b);
            const counts = bounds.map((bound) => now.buckets[bound] - ((before && before.buckets[bound]) || 0));
            const total = counts[counts.length - 1] || 0;
            if (total <= 0) return null;
            let lower = 0, below = 0;
            for (let i = 0; i < bounds.length; i++) {
              if (counts[i] >= q * total) {
                const upper = bounds[i] === Infinity ? lower : bounds[i];
                const inBucket = counts[i] - below;
                return 1000 * (lower + (inBucket > 0 ? (upper - lower) * (q * total - below) / inBucket : 0));
              }
              lower = bounds[i];
              below = counts[i];
            }
            return null;
          }

          function chart(id, values, unit) {
            const svg = $(id + "-chart");
            const points = values.slice(-30);
            const top = Math.max(1, ...points.filter((v) => v !== null));
            const svgNamespace = "http://www.w3.org/2000/svg";
            const coordinates = points.map((v, i) => [i * 300 / 29, 58 - 56 * (v || 0) / top]);
            const line = document.createElementNS(svgNamespace, "polyline");
            line.setAttribute("points", coordinates.map(([x, y]) => x.toFixed(1) + "," + y.toFixed(1)).join(" "));
            // The newest point as a dot: a line needs two.
            const dot = document.createElementNS(svgNamespace, "circle");
            const [x, y] = coordinates.length ? coordinates[coordinates.length - 1] : [0, 58];
            dot.setAttribute("cx", x.toFixed(1));
            dot.setAttribute("cy", y.toFixed(1));
            dot.setAttribute("r", "3");
            svg.replaceChildren(line, dot);
            const last = points.length ? points[points.length - 1] : null;
            const digits = unit === "ms" ? 1 : unit === "requests" || unit === "streams" ? 0 : 2;
            $(id + "-now").textContent = last === null ? "no requests in the last interval" : "now " + last.toFixed(digits) + " " + unit + ", highest shown " + top.toFixed(digits);
          }

          async function readMetrics() {
            const headers = { Accept: "text/plain" };
            if (token) headers.Authorization = "Bearer " + token;
            try {
              const response = await fetch("/_metrics", { headers, cache: "no-store", credentials: "omit" });
              if (response.status === 404) { say("health-status", "This server serves no metrics: start it with --metrics.", "bad"); stopHealth(); return; }
              if (!response.ok) throw new Error(response.status + " " + response.statusText);
              const now = reading(samples(await response.text()));
              // The open streams, counted by the server (GET /_admin/streams), not by the metrics.
              try { now.streams = (await api("GET", "/_admin/streams")).body.streams.length; } catch (error) { now.streams = null; }
              const before = health.previous;
              health.previous = now;
              const body = $("errors").tBodies[0];
              body.replaceChildren(...Object.keys(now.statuses).sort().map((status) =>
                el("tr", {}, el("td", { text: status }), el("td", { class: "number", text: String(now.statuses[status]) }))));
              if (!before) { say("health-status", "Reading the metrics; the charts start with the next reading."); return; }
              const seconds = Math.max(0.001, (now.time - before.time) / 1000);
              health.series.rate.push(Math.max(0, now.requests - before.requests) / seconds);
              health.series.p50.push(quantile(now, before, 0.5));
              health.series.p99.push(quantile(now, before, 0.99));
              health.series.active.push(now.active);
              health.series.streams.push(now.streams);
              // The charts show the last 30 readings: older ones go, or a console left open grows without end.
              for (const values of Object.values(health.series)) values.splice(0, Math.max(0, values.length - 30));
              chart("rate", health.series.rate, "requests/s");
              chart("p50", health.series.p50, "ms");
              chart("p99", health.series.p99, "ms");
              chart("active", health.series.active, "requests");
              chart("streams", health.series.streams, "streams");
              say("health-status", "Updated " + new Date(now.time).toLocaleTimeString() + ".", "good");
            } catch (error) {
              say("health-status", "Could not read the metrics: " + described(error), "bad");
            }
          }

          function stopHealth() {
            if (health.timer) clearInterval(health.timer);
            health.timer = null;
          }

          function startHealth() {
            if (health.timer) return;
            readMetrics();
            health.timer = setInterval(readMetrics, 5000);
          }

          // --- A backup to download (the SQLite backend): fetched with the token, saved as a file ---

          $("backup").addEventListener("click", async () => {
            say("backup-status", "Making the backup…");
            const headers = {};
            if (token) headers.Authorization = "Bearer " + token;
            try {
              const response = await fetch("/_admin/backup", { headers, cache: "no-store", credentials: "omit" });
              if (!response.ok) {
                let message = response.status + " " + response.statusText;
                try { message = response.status + ": " + (await response.json()).error; } catch (error) { /* the status says enough */ }
                throw new Error(message);
              }
              const blob = await response.blob();
              const disposition = /filename="([^"]+)"/.exec(response.headers.get("Content-Disposition") || "");
              const link = el("a", { href: URL.createObjectURL(blob), download: disposition ? disposition[1] : "modelsync-backup.sqlite" });
              document.body.append(link);
              link.click();
              link.remove();
              setTimeout(() => URL.revokeObjectURL(link.href), 60000);
              say("backup-status", "Backup downloaded (" + blob.size + " bytes).", "good");
            } catch (error) {
              say("backup-status", "No backup: " + described(error), "bad");
            }
          });

          // --- Start ---

          if (openServer) {
            $("rules-button").hidden = true;
            const notice = $("notice");
            notice.textContent = "This server has no access rules: anyone on this machine can read and change its data, so the console answers only here (loopback). Start the server with access rules to reach it from elsewhere.";
            notice.hidden = false;
            enter(null);
          } else {
            $("sign-in").hidden = false;
            $("login-email").focus();
          }
        })();
        """#
}
