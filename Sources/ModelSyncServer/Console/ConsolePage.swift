/// The console's text: its page here, its script (`ConsoleScript.swift`) and style sheet
/// (`ConsoleStyle.swift`). Plain HTML, CSS and JavaScript, so that the binary carries them and
/// nothing is built or fetched elsewhere. `data-console-settings` on `<body>` becomes the
/// server's settings (``ConsoleAsset/bytes(accessRules:accountsCollection:)``).
enum ConsoleText {
    static let page = #"""
        <!doctype html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <title>ModelSync console</title>
        <link rel="stylesheet" href="/_console/console.css">
        <script src="/_console/console.js" defer></script>
        </head>
        <body data-console-settings>
        <a class="skip" href="#main">Skip to the content</a>
        <header class="top">
          <h1>ModelSync console</h1>
          <p id="who" aria-live="polite"></p>
          <button type="button" id="sign-out" hidden>Sign out</button>
        </header>
        <p id="notice" class="notice" hidden></p>
        <main id="main" tabindex="-1">
          <section id="sign-in" aria-labelledby="sign-in-title" hidden>
            <h2 id="sign-in-title">Sign in as an admin</h2>
            <form id="login-form" class="stack">
              <label for="login-email">Email</label>
              <input id="login-email" name="email" type="email" autocomplete="username" required>
              <label for="login-password">Password</label>
              <input id="login-password" name="password" type="password" autocomplete="current-password" required>
              <button type="submit">Sign in</button>
            </form>
            <form id="token-form" class="stack">
              <label for="token-text">Or paste an admin access token (JWT)</label>
              <textarea id="token-text" rows="3" autocomplete="off" spellcheck="false"></textarea>
              <button type="submit">Use this token</button>
            </form>
            <p id="sign-in-status" class="status" role="alert"></p>
          </section>
          <div id="app" hidden>
            <nav class="views" aria-label="Views">
              <button type="button" data-view="data-view" aria-controls="data-view" aria-pressed="true">Data</button>
              <button type="button" data-view="users-view" aria-controls="users-view" aria-pressed="false">Users</button>
              <button type="button" data-view="feed-view" aria-controls="feed-view" aria-pressed="false">Sync</button>
              <button type="button" data-view="rules-view" aria-controls="rules-view" aria-pressed="false" id="rules-button">Rules</button>
              <button type="button" data-view="health-view" aria-controls="health-view" aria-pressed="false">Health</button>
            </nav>
            <section id="data-view" aria-labelledby="collections-title">
              <div class="row">
                <h2 id="collections-title">Collections</h2>
                <button type="button" id="refresh-collections">Refresh</button>
              </div>
              <p id="collections-status" class="status" aria-live="polite"></p>
              <div class="table-wrap">
                <table id="collections">
                  <caption class="visually-hidden">Collections and singular resources, with their row counts</caption>
                  <thead><tr><th scope="col">Name</th><th scope="col">Kind</th><th scope="col">Rows</th></tr></thead>
                  <tbody></tbody>
                </table>
              </div>
              <section id="records-section" aria-labelledby="records-title" hidden>
                <h2 id="records-title">Records</h2>
                <form id="query-form" class="query">
                  <div>
                    <label for="query-filters">Filters (the server's query, e.g. <code>title_like=^a&amp;views_gte=10</code>)</label>
                    <input id="query-filters" name="filters" autocomplete="off" spellcheck="false">
                  </div>
                  <div>
                    <label for="query-sort">Sort (e.g. <code>-views,title</code>)</label>
                    <input id="query-sort" name="sort" autocomplete="off" spellcheck="false">
                  </div>
                  <div>
                    <label for="query-per-page">Rows per page</label>
                    <input id="query-per-page" name="perPage" type="number" min="1" max="500" value="20">
                  </div>
                  <button type="submit">Apply</button>
                  <button type="button" id="new-record">New record</button>
                </form>
                <p id="records-status" class="status" aria-live="polite"></p>
                <div class="table-wrap">
                  <table id="records">
                    <caption class="visually-hidden">Records of the collection</caption>
                    <thead></thead>
                    <tbody></tbody>
                  </table>
                </div>
                <nav class="pager" aria-label="Pages">
                  <button type="button" id="records-previous">Previous page</button>
                  <span id="records-page-label"></span>
                  <button type="button" id="records-next">Next page</button>
                </nav>
              </section>
              <section id="editor" aria-labelledby="editor-title" hidden>
                <h2 id="editor-title" tabindex="-1">Record</h2>
                <p class="hint">Text fields hold text; the others hold JSON (a number, true, null, an object…).</p>
                <form id="editor-form" class="stack" novalidate>
                  <div id="editor-fields"></div>
                  <fieldset class="add-field">
                    <legend>Add a field</legend>
                    <label for="new-field-name">Name</label>
                    <input id="new-field-name" autocomplete="off" spellcheck="false">
                    <button type="button" id="add-field">Add field</button>
                  </fieldset>
                  <div class="row">
                    <button type="submit" id="save-record">Save</button>
                    <button type="button" id="delete-record">Delete</button>
                    <button type="button" id="cancel-edit">Close</button>
                  </div>
                </form>
                <p id="editor-status" class="status" role="alert"></p>
              </section>
            </section>
            <section id="users-view" aria-labelledby="users-title" hidden>
              <h2 id="users-title">Users</h2>
              <form id="users-form" class="query">
                <div>
                  <label for="users-filters">Filters (e.g. <code>email_like=ann</code>)</label>
                  <input id="users-filters" autocomplete="off" spellcheck="false">
                </div>
                <button type="submit">Show</button>
              </form>
              <p id="users-status" class="status" role="status"></p>
              <div class="table-wrap">
                <table id="users">
                  <caption class="visually-hidden">Accounts</caption>
                  <thead><tr><th scope="col">Id</th><th scope="col">Email</th><th scope="col">Role</th><th scope="col">Sessions</th><th scope="col">Password</th></tr></thead>
                  <tbody></tbody>
                </table>
              </div>
              <nav class="pager" aria-label="Pages of users">
                <button type="button" id="users-previous">Previous page</button>
                <span id="users-page-label"></span>
                <button type="button" id="users-next">Next page</button>
              </nav>
              <p class="hint">A role takes effect on the account's next request. Resetting a password (PUT /_accounts/{id}/password) ends every session of the account, as ending its sessions does.</p>
            </section>
            <section id="feed-view" aria-labelledby="feed-title" hidden>
              <h2 id="feed-title">Live change feed</h2>
              <form id="feed-form" class="query">
                <div>
                  <label for="feed-collections">Collections (comma-separated; empty: all)</label>
                  <input id="feed-collections" autocomplete="off" spellcheck="false">
                </div>
                <div>
                  <label for="feed-user">User id (rows it owns; empty: all)</label>
                  <input id="feed-user" autocomplete="off" spellcheck="false">
                </div>
                <button type="submit" id="feed-start">Follow</button>
                <button type="button" id="feed-stop" disabled>Stop</button>
                <button type="button" id="feed-clear">Clear</button>
              </form>
              <p id="feed-status" class="status" role="status"></p>
              <ol id="feed-events" class="events" aria-label="Changes, newest first"></ol>
              <div class="row">
                <h2 id="sync-title">Open streams and recent writes</h2>
                <button type="button" id="sync-refresh">Refresh</button>
              </div>
              <p id="sync-status" class="status" role="status"></p>
              <div class="table-wrap">
                <table id="streams">
                  <caption>Change streams open now</caption>
                  <thead><tr><th scope="col">User</th><th scope="col">Address</th><th scope="col">Open since</th><th scope="col">Collections</th></tr></thead>
                  <tbody></tbody>
                </table>
              </div>
              <div class="table-wrap">
                <table id="writes">
                  <caption>The latest writes' answers, newest first</caption>
                  <thead><tr><th scope="col">At</th><th scope="col">User</th><th scope="col">Write</th><th scope="col">Status</th><th scope="col">Notes</th></tr></thead>
                  <tbody></tbody>
                </table>
              </div>
            </section>
            <section id="rules-view" aria-labelledby="rules-title" hidden>
              <h2 id="rules-title">Access rules as loaded</h2>
              <p id="rules-status" class="status" role="status"></p>
              <div class="table-wrap">
                <table id="rules">
                  <caption class="visually-hidden">Each collection's rule</caption>
                  <thead><tr><th scope="col">Collection</th><th scope="col">Mode, or a standing per operation</th><th scope="col">Owner field</th><th scope="col">Role modes, or members and parent</th></tr></thead>
                  <tbody></tbody>
                </table>
              </div>
              <h2 id="check-title">Why can (or can't) a user see a row?</h2>
              <form id="check-form" class="query" aria-labelledby="check-title">
                <div>
                  <label for="check-collection">Collection</label>
                  <input id="check-collection" required autocomplete="off" spellcheck="false">
                </div>
                <div>
                  <label for="check-id">Row id</label>
                  <input id="check-id" required autocomplete="off" spellcheck="false">
                </div>
                <div>
                  <label for="check-user">User id (empty: anonymous)</label>
                  <input id="check-user" autocomplete="off" spellcheck="false">
                </div>
                <div>
                  <label for="check-role">Role (empty: the account's own)</label>
                  <input id="check-role" autocomplete="off" spellcheck="false">
                </div>
                <button type="submit">Check</button>
              </form>
              <div id="check-result" role="status" aria-live="polite"></div>
            </section>
            <section id="health-view" aria-labelledby="health-title" hidden>
              <h2 id="health-title">Health</h2>
              <p class="hint">From the server's metrics (<code>/_metrics</code>, on a server started with <code>--metrics</code>), read every 5 seconds while this view is open; each point is one interval.</p>
              <p id="health-status" class="status" role="status"></p>
              <div class="charts">
                <figure><figcaption id="rate-caption">Requests per second</figcaption><svg id="rate-chart" class="chart" viewBox="0 0 300 60" role="img" aria-labelledby="rate-caption rate-now"></svg><p id="rate-now" class="now"></p></figure>
                <figure><figcaption id="p50-caption">p50 latency (ms)</figcaption><svg id="p50-chart" class="chart" viewBox="0 0 300 60" role="img" aria-labelledby="p50-caption p50-now"></svg><p id="p50-now" class="now"></p></figure>
                <figure><figcaption id="p99-caption">p99 latency (ms)</figcaption><svg id="p99-chart" class="chart" viewBox="0 0 300 60" role="img" aria-labelledby="p99-caption p99-now"></svg><p id="p99-now" class="now"></p></figure>
                <figure><figcaption id="active-caption">Requests in flight</figcaption><svg id="active-chart" class="chart" viewBox="0 0 300 60" role="img" aria-labelledby="active-caption active-now"></svg><p id="active-now" class="now"></p></figure>
                <figure><figcaption id="streams-caption">Open change streams</figcaption><svg id="streams-chart" class="chart" viewBox="0 0 300 60" role="img" aria-labelledby="streams-caption streams-now"></svg><p id="streams-now" class="now"></p></figure>
              </div>
              <div class="table-wrap">
                <table id="errors">
                  <caption>Answers by status since the server started</caption>
                  <thead><tr><th scope="col">Status</th><th scope="col">Answers</th></tr></thead>
                  <tbody></tbody>
                </table>
              </div>
              <h2 id="backup-title">Backup</h2>
              <p class="hint">On the SQLite backend: one consistent copy of the database file, made while the server runs (VACUUM INTO), to download.</p>
              <button type="button" id="backup">Download a backup</button>
              <p id="backup-status" class="status" role="status"></p>
            </section>
          </div>
        </main>
        </body>
        </html>
        """#
}
