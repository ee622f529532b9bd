"""The browser console of modelsync-server, driven in headless Chromium (.ci/browser runs it).

Expects a server with access rules at MODELSYNC_CONSOLE_URL whose data has the posts of
.ci/browser (two of them hostile) and an admin MODELSYNC_ADMIN_EMAIL / MODELSYNC_ADMIN_PASSWORD.
Each check is a function; the run ends with the line "N passed, N failed".
"""

import base64
import json
import os
import shutil
import sys
import tempfile
import traceback
import urllib.error
import urllib.request

from selenium import webdriver
from selenium.common.exceptions import NoAlertPresentException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import WebDriverWait

BASE = os.environ["MODELSYNC_CONSOLE_URL"]
ADMIN = (os.environ["MODELSYNC_ADMIN_EMAIL"], os.environ["MODELSYNC_ADMIN_PASSWORD"])
USER = ("ann@example.com", "ann's password")
OTHER = ("bob@example.com", "bob's password")
SCREENSHOTS = os.environ.get("MODELSYNC_SCREENSHOTS", ".")
WAIT = 60  # seconds: a guard against a hang only (bcrypt in a debug build on a busy machine)


def request(method, path, body=None, token=None):
    """Sends a request to the API; returns (status, parsed JSON body or None)."""
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(BASE + path, data=data, method=method)
    if data is not None:
        req.add_header("Content-Type", "application/json")
    if token:
        req.add_header("Authorization", "Bearer " + token)
    try:
        with urllib.request.urlopen(req, timeout=WAIT) as response:
            text = response.read()
            return response.status, json.loads(text) if text else None
    except urllib.error.HTTPError as error:
        text = error.read()
        try:
            return error.code, json.loads(text)
        except ValueError:
            return error.code, None


def claims(token):
    payload = token.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))


def new_driver(profile):
    options = webdriver.ChromeOptions()
    options.add_experimental_option("prefs", {"download.default_directory": os.path.join(profile, "downloads"), "download.prompt_for_download": False})
    options.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
    # Root needs --no-sandbox; a profile of its own keeps runs apart.
    for argument in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     "--user-data-dir=" + profile, "--window-size=1280,900"]:
        options.add_argument(argument)
    service = Service(shutil.which("chromedriver") or "/usr/bin/chromedriver")
    return webdriver.Chrome(service=service, options=options)


def wait_for(driver, condition, what):
    return WebDriverWait(driver, WAIT).until(lambda d: condition(d), message="waiting for " + what)


def text_of(driver, element_id):
    return driver.find_element(By.ID, element_id).text


def open_console(driver):
    driver.get(BASE + "/_console")
    wait_for(driver, lambda d: d.find_element(By.ID, "sign-in").is_displayed(), "the sign-in form")


def sign_in(driver, email, password):
    open_console(driver)
    driver.find_element(By.ID, "login-email").send_keys(email)
    driver.find_element(By.ID, "login-password").send_keys(password)
    driver.find_element(By.CSS_SELECTOR, "#login-form button[type=submit]").click()


def sign_in_as_admin(driver):
    sign_in(driver, *ADMIN)
    wait_for(driver, lambda d: d.find_element(By.ID, "app").is_displayed(), "the admin's console")


def no_script_ran(driver):
    """No payload ran: no flag set, no alert open."""
    try:
        driver.switch_to.alert
        return False
    except NoAlertPresentException:
        pass
    return driver.execute_script("return window.__pwned === undefined")


def browse(driver, collection):
    driver.find_element(By.CSS_SELECTOR, "#collections button[aria-label='Browse %s']" % collection).click()
    wait_for(driver, lambda d: "records match" in text_of(d, "records-status"), "the records")


def filter_records(driver, filters):
    field = driver.find_element(By.ID, "query-filters")
    field.clear()
    field.send_keys(filters)
    driver.find_element(By.CSS_SELECTOR, "#query-form button[type=submit]").click()
    wait_for(driver, lambda d: "records match" in text_of(d, "records-status") and d.find_element(By.ID, "query-filters").get_attribute("value") == filters, "the filtered records")


def record_rows(driver):
    return [[cell.text for cell in row.find_elements(By.TAG_NAME, "td")] for row in driver.find_elements(By.CSS_SELECTOR, "#records tbody tr")]


def edit_title(driver, record_id, title):
    driver.find_element(By.CSS_SELECTOR, "#records button[aria-label='Edit record %s']" % record_id).click()
    wait_for(driver, lambda d: d.find_element(By.ID, "editor").is_displayed() and d.find_elements(By.CSS_SELECTOR, "[data-field=title]"), "the editor")
    field = driver.find_element(By.CSS_SELECTOR, "[data-field=title]")
    field.clear()
    field.send_keys(title)
    driver.find_element(By.ID, "save-record").click()
    wait_for(driver, lambda d: text_of(d, "editor-status").startswith(("Saved", "Not saved")), "the save")
    assert text_of(driver, "editor-status").startswith("Saved"), text_of(driver, "editor-status")


# --- The checks ---

def anonymous_is_refused(driver):
    open_console(driver)
    assert not driver.find_element(By.ID, "app").is_displayed(), "the console's data shows to an anonymous visitor"
    assert request("GET", "/db")[0] == 401
    assert request("GET", "/_admin/collections")[0] == 401
    assert request("GET", "/_metrics")[0] == 401
    assert request("PUT", "/_accounts/1/role", {"role": "admin"})[0] == 401
    # A forged token is refused by the page too.
    driver.find_element(By.ID, "token-text").send_keys("not.a.token")
    driver.find_element(By.CSS_SELECTOR, "#token-form button[type=submit]").click()
    wait_for(driver, lambda d: "Refused" in text_of(d, "sign-in-status"), "the refusal")
    assert not driver.find_element(By.ID, "app").is_displayed()


def a_non_admin_is_refused(driver):
    status, _ = request("POST", "/register", {"email": USER[0], "password": USER[1], "name": "Ann"})
    assert status in (201, 400), status  # 400: registered by an earlier check of this run
    status, answer = request("POST", "/login", {"email": USER[0], "password": USER[1]})
    assert status == 200, (status, answer)
    sign_in(driver, *USER)
    wait_for(driver, lambda d: "Refused" in text_of(d, "sign-in-status"), "the refusal")
    assert not driver.find_element(By.ID, "app").is_displayed(), "the console's data shows to a non-admin"
    assert request("GET", "/db", token=answer["accessToken"])[0] == 403
    assert request("GET", "/_admin/collections", token=answer["accessToken"])[0] == 403
    assert request("GET", "/_admin/writes", token=answer["accessToken"])[0] == 403
    assert request("GET", "/_metrics", token=answer["accessToken"])[0] == 403
    assert request("PUT", "/_accounts/%s/role" % answer["user"]["id"], {"role": "admin"}, token=answer["accessToken"])[0] == 403


def the_admin_browses_filters_and_edits(driver):
    # The counts come from the count route, not from reading /db.
    status, answer = request("GET", "/_admin/collections", token=admin_token())
    assert status == 200 and {"name": "posts", "kind": "collection", "rows": 4} in answer["collections"], answer
    sign_in_as_admin(driver)
    counts = {row.find_elements(By.TAG_NAME, "td")[0].text: row.find_elements(By.TAG_NAME, "td")[2].text
              for row in driver.find_elements(By.CSS_SELECTOR, "#collections tbody tr")}
    assert counts.get("posts") == "4", counts
    browse(driver, "posts")
    assert len(record_rows(driver)) == 4
    filter_records(driver, "views_gte=10")
    assert sorted(row[0] for row in record_rows(driver)) == ["1", "2"], record_rows(driver)
    # Sorted by the server, a page at a time.
    driver.find_element(By.ID, "query-sort").send_keys("-views")
    per_page = driver.find_element(By.ID, "query-per-page")
    per_page.clear()
    per_page.send_keys("1")
    filter_records(driver, "views_gte=10")
    assert [row[0] for row in record_rows(driver)] == ["2"] and text_of(driver, "records-page-label") == "Page 1 of 2", record_rows(driver)
    driver.find_element(By.ID, "records-next").click()
    wait_for(driver, lambda d: text_of(d, "records-page-label") == "Page 2 of 2", "the second page")
    assert [row[0] for row in record_rows(driver)] == ["1"], record_rows(driver)
    driver.find_element(By.ID, "query-sort").clear()
    per_page.clear()
    per_page.send_keys("20")
    filter_records(driver, "title_like=^alp")
    assert [row[0] for row in record_rows(driver)] == ["1"], record_rows(driver)
    edit_title(driver, "1", "alpha edited")
    assert request("GET", "/posts/1")[1]["title"] == "alpha edited"
    # A stale version is not written over: the page shows the refusal and the current record.
    status, _ = request("PATCH", "/posts/1", {"views": 11}, token=admin_token())
    assert status == 200
    field = driver.find_element(By.CSS_SELECTOR, "[data-field=title]")
    field.clear()
    field.send_keys("stale edit")
    driver.find_element(By.ID, "save-record").click()
    wait_for(driver, lambda d: text_of(d, "editor-status").startswith("Not saved"), "the conflict")
    assert "changed this record" in text_of(driver, "editor-status")
    assert request("GET", "/posts/1")[1]["title"] == "alpha edited"


def the_edit_shows_in_the_live_feed_of_a_second_tab(driver):
    sign_in_as_admin(driver)
    first = driver.current_window_handle
    driver.switch_to.new_window("tab")
    second = driver.current_window_handle
    sign_in_as_admin(driver)
    driver.find_element(By.CSS_SELECTOR, "[data-view=feed-view]").click()
    driver.find_element(By.ID, "feed-collections").send_keys("posts")
    driver.find_element(By.ID, "feed-start").click()
    wait_for(driver, lambda d: d.find_element(By.ID, "feed-events").get_attribute("data-ready") == "true", "the stream")
    driver.switch_to.window(first)
    browse(driver, "posts")
    filter_records(driver, "id=2")
    edit_title(driver, "2", "beta seen live")
    driver.switch_to.window(second)
    wait_for(driver, lambda d: "beta seen live" in text_of(d, "feed-events"), "the change in the feed")
    assert "posts/2 written" in text_of(driver, "feed-events")
    # A hostile record's change renders as text in the feed too.
    status, _ = request("PATCH", "/posts/3", {"views": 3}, token=admin_token())
    assert status == 200
    wait_for(driver, lambda d: "posts/3 written" in text_of(d, "feed-events"), "the hostile change")
    assert "<img src=x" in text_of(driver, "feed-events")
    assert not driver.find_elements(By.CSS_SELECTOR, "#feed-events img")
    assert no_script_ran(driver)
    driver.close()
    driver.switch_to.window(first)


def a_role_is_changed(driver):
    sign_in_as_admin(driver)
    driver.find_element(By.CSS_SELECTOR, "[data-view=users-view]").click()
    wait_for(driver, lambda d: "accounts" in text_of(d, "users-status"), "the accounts")
    role = driver.find_element(By.CSS_SELECTOR, "input[aria-label='Role of %s']" % USER[0])
    role.send_keys("editor")
    driver.find_element(By.CSS_SELECTOR, "button[aria-label='Set the role of %s']" % USER[0]).click()
    wait_for(driver, lambda d: "is now editor" in text_of(d, "users-status"), "the role change")
    status, answer = request("POST", "/login", {"email": USER[0], "password": USER[1]})
    assert status == 200 and claims(answer["accessToken"]).get("role") == "editor", answer
    driver.find_element(By.CSS_SELECTOR, "button[aria-label='End every session of %s']" % USER[0]).click()
    wait_for(driver, lambda d: "signed out everywhere" in text_of(d, "users-status"), "the sign-out")
    assert request("GET", "/posts", token=answer["accessToken"])[0] == 401


def a_password_is_reset(driver):
    status, _ = request("POST", "/register", {"email": OTHER[0], "password": OTHER[1]})
    assert status == 201, status
    status, before = request("POST", "/login", {"email": OTHER[0], "password": OTHER[1]})
    assert status == 200, before
    # Not by a non-admin, nor anonymously.
    status, ann = request("POST", "/login", {"email": USER[0], "password": USER[1]})
    assert status == 200, ann
    path = "/_accounts/%s/password" % before["user"]["id"]
    assert request("PUT", path, {"newPassword": "set by ann herself"}, token=ann["accessToken"])[0] == 403
    assert request("PUT", path, {"newPassword": "set by nobody at all"})[0] == 401
    sign_in_as_admin(driver)
    driver.find_element(By.CSS_SELECTOR, "[data-view=users-view]").click()
    wait_for(driver, lambda d: "accounts" in text_of(d, "users-status"), "the accounts")
    driver.find_element(By.CSS_SELECTOR, "input[aria-label='New password for %s']" % OTHER[0]).send_keys("set by the admin")
    driver.find_element(By.CSS_SELECTOR, "button[aria-label='Reset the password of %s']" % OTHER[0]).click()
    wait_for(driver, lambda d: "is reset" in text_of(d, "users-status"), "the reset")
    # The account's sessions ended; the old password no longer signs in, the new one does.
    assert request("GET", "/posts", token=before["accessToken"])[0] == 401
    assert request("POST", "/login", {"email": OTHER[0], "password": OTHER[1]})[0] == 400
    assert request("POST", "/login", {"email": OTHER[0], "password": "set by the admin"})[0] == 200


def the_sync_view_shows_streams_writes_and_a_users_changes(driver):
    status, ann = request("POST", "/login", {"email": USER[0], "password": USER[1]})
    assert status == 200, ann
    ann_id = str(ann["user"]["id"])
    sign_in_as_admin(driver)
    driver.find_element(By.CSS_SELECTOR, "[data-view=feed-view]").click()
    driver.find_element(By.ID, "feed-collections").send_keys("posts")
    driver.find_element(By.ID, "feed-user").send_keys(ann_id)
    driver.find_element(By.ID, "feed-start").click()
    wait_for(driver, lambda d: d.find_element(By.ID, "feed-events").get_attribute("data-ready") == "true", "the stream")
    # The admin's change of a row no one owns, then Ann's create (sent twice with one key: a
    # replay), and a stale edit (412): the feed shows Ann's row alone.
    assert request("PATCH", "/posts/2", {"views": 31}, token=admin_token())[0] == 200
    req = urllib.request.Request(BASE + "/posts", data=json.dumps({"title": "Ann's own"}).encode(), method="POST")
    for name, value in [("Content-Type", "application/json"), ("Authorization", "Bearer " + ann["accessToken"]), ("Idempotency-Key", "ann-console-1")]:
        req.add_header(name, value)
    replays = []
    for _ in range(2):
        with urllib.request.urlopen(req, timeout=WAIT) as response:
            replays.append(response.headers.get("Idempotent-Replayed"))
            created = json.loads(response.read())
    assert replays == [None, "true"], replays
    req = urllib.request.Request(BASE + "/posts/1", data=b'{"views": 12}', method="PATCH")
    for name, value in [("Content-Type", "application/json"), ("Authorization", "Bearer " + admin_token()), ("If-Match", '"999999"')]:
        req.add_header(name, value)
    try:
        urllib.request.urlopen(req, timeout=WAIT)
        assert False, "a stale If-Match was taken"
    except urllib.error.HTTPError as error:
        assert error.code == 412, error.code
    wait_for(driver, lambda d: "Ann's own" in text_of(d, "feed-events"), "Ann's change in the feed")
    assert "posts/2" not in text_of(driver, "feed-events"), text_of(driver, "feed-events")
    driver.find_element(By.ID, "sync-refresh").click()
    wait_for(driver, lambda d: "streams open" in text_of(d, "sync-status") and "idempotent replay" in text_of(d, "writes"), "the streams and writes")
    streams = [[cell.text for cell in row.find_elements(By.TAG_NAME, "td")] for row in driver.find_elements(By.CSS_SELECTOR, "#streams tbody tr")]
    assert any(row[3] == "posts" and "(admin)" in row[0] for row in streams), streams
    writes = [[cell.text for cell in row.find_elements(By.TAG_NAME, "td")] for row in driver.find_elements(By.CSS_SELECTOR, "#writes tbody tr")]
    assert ["POST posts/%s" % created["id"], "201", "idempotent replay"] in [row[2:] for row in writes], writes
    assert ["PATCH posts/1", "412", "conflict: stale If-Match"] in [row[2:] for row in writes], writes
    assert driver.find_elements(By.CSS_SELECTOR, "#writes tr.conflict")
    stop = driver.find_element(By.ID, "feed-stop")
    stop.click()


def a_backup_downloads(driver):
    # Not to a non-admin.
    status, ann = request("POST", "/login", {"email": USER[0], "password": USER[1]})
    assert request("GET", "/_admin/backup", token=ann["accessToken"])[0] == 403
    downloads = tempfile.mkdtemp(prefix="modelsync-downloads-")
    try:
        driver.execute_cdp_cmd("Browser.setDownloadBehavior", {"behavior": "allow", "downloadPath": downloads})
        sign_in_as_admin(driver)
        driver.find_element(By.CSS_SELECTOR, "[data-view=health-view]").click()
        driver.find_element(By.ID, "backup").click()
        wait_for(driver, lambda d: text_of(d, "backup-status").startswith(("Backup downloaded", "No backup")), "the backup")
        assert text_of(driver, "backup-status").startswith("Backup downloaded"), text_of(driver, "backup-status")
        wait_for(driver, lambda d: [name for name in os.listdir(downloads) if name.endswith(".sqlite")], "the downloaded file")
        name = [name for name in os.listdir(downloads) if name.endswith(".sqlite")][0]
        assert name.startswith("modelsync-backup-"), name
        with open(os.path.join(downloads, name), "rb") as file:
            assert file.read(16) == b"SQLite format 3\x00"
    finally:
        shutil.rmtree(downloads, ignore_errors=True)


def the_rules_view_explains_a_row(driver):
    sign_in_as_admin(driver)
    driver.find_element(By.CSS_SELECTOR, "[data-view=rules-view]").click()
    wait_for(driver, lambda d: "Accounts live in" in text_of(d, "rules-status"), "the rules")
    rules = [[cell.text for cell in row.find_elements(By.TAG_NAME, "td")] for row in driver.find_elements(By.CSS_SELECTOR, "#rules tbody tr")]
    assert ["posts", "644", "userId", "—"] in rules, rules
    status, ann = request("POST", "/login", {"email": USER[0], "password": USER[1]})
    assert status == 200
    for field, value in [("check-collection", "posts"), ("check-id", "1"), ("check-user", str(ann["user"]["id"]))]:
        driver.find_element(By.ID, field).send_keys(value)
    driver.find_element(By.CSS_SELECTOR, "#check-form button[type=submit]").click()
    wait_for(driver, lambda d: d.find_elements(By.ID, "check-write"), "the answer")
    assert "may read posts/1: everyone may read" in text_of(driver, "check-read"), text_of(driver, "check-read")
    assert "may not write it: only its owner may write" in text_of(driver, "check-write"), text_of(driver, "check-write")
    assert "(role editor)" in text_of(driver, "check-read")


def the_rules_view_explains_a_shared_row(driver):
    sign_in_as_admin(driver)
    driver.find_element(By.CSS_SELECTOR, "[data-view=rules-view]").click()
    wait_for(driver, lambda d: "Accounts live in" in text_of(d, "rules-status"), "the rules")
    rules = {row[0]: row for row in ([cell.text for cell in tr.find_elements(By.TAG_NAME, "td")] for tr in driver.find_elements(By.CSS_SELECTOR, "#rules tbody tr"))}
    assert rules["cards"][3] == "parent boards by boardId", rules
    assert "update: editor" in rules["cards"][1], rules
    assert "manager" in rules["memberships"][1], rules
    for field, value in [("check-collection", "cards"), ("check-id", "1"), ("check-user", "5")]:
        driver.find_element(By.ID, field).send_keys(value)
    driver.find_element(By.CSS_SELECTOR, "#check-form button[type=submit]").click()
    wait_for(driver, lambda d: d.find_elements(By.ID, "check-write"), "the answer")
    assert "User 5 stands as signedIn on cards/1" in text_of(driver, "check-read"), text_of(driver, "check-read")
    assert "May not read (view needs viewer)" in text_of(driver, "check-write"), text_of(driver, "check-write")


def the_health_view_charts_the_metrics(driver):
    sign_in_as_admin(driver)
    driver.find_element(By.CSS_SELECTOR, "[data-view=health-view]").click()
    # Two readings five seconds apart make the first point.
    wait_for(driver, lambda d: text_of(d, "health-status").startswith("Updated"), "the charts")
    assert "requests/s" in text_of(driver, "rate-now"), text_of(driver, "rate-now")
    assert " ms" in text_of(driver, "p99-now") or "no requests" in text_of(driver, "p99-now"), text_of(driver, "p99-now")
    assert driver.find_elements(By.CSS_SELECTOR, "#rate-chart polyline")
    assert " streams" in text_of(driver, "streams-now"), text_of(driver, "streams-now")
    statuses = [row.find_elements(By.TAG_NAME, "td")[0].text for row in driver.find_elements(By.CSS_SELECTOR, "#errors tbody tr")]
    assert "200" in statuses and "401" in statuses and "403" in statuses, statuses
    driver.save_screenshot(os.path.join(SCREENSHOTS, "console-health.png"))


def hostile_records_render_as_text(driver):
    sign_in_as_admin(driver)
    browse(driver, "posts")
    filter_records(driver, "views_lte=3")
    titles = [row[1] for row in record_rows(driver)]
    assert '<img src=x onerror="window.__pwned=1;alert(1)">' in titles, titles
    assert "</script><script>window.__pwned=2;alert(2)</script>" in titles, titles
    assert not driver.find_elements(By.CSS_SELECTOR, "#records img, #records script")
    driver.find_element(By.CSS_SELECTOR, "#records button[aria-label='Edit record 4']").click()
    wait_for(driver, lambda d: d.find_elements(By.CSS_SELECTOR, "[data-field=title]"), "the editor")
    assert driver.find_element(By.CSS_SELECTOR, "[data-field=title]").get_attribute("value").startswith("</script>")
    assert no_script_ran(driver), "a hostile title ran as script"


def keyboard_and_labels(driver):
    open_console(driver)
    # The page starts in the email field; Tab alone reaches the rest of the sign-in, in order.
    wait_for(driver, lambda d: d.switch_to.active_element.get_attribute("id") == "login-email", "the focus in the email field")
    reached = []
    for _ in range(4):
        driver.switch_to.active_element.send_keys(Keys.TAB)
        active = driver.switch_to.active_element
        reached.append(active.get_attribute("id") or active.text)
    assert reached == ["login-password", "Sign in", "token-text", "Use this token"], reached
    # Signing in by keyboard: Enter submits the form.
    driver.find_element(By.ID, "login-email").send_keys(ADMIN[0])
    driver.find_element(By.ID, "login-password").send_keys(ADMIN[1] + Keys.ENTER)
    wait_for(driver, lambda d: d.find_element(By.ID, "app").is_displayed(), "the console after a keyboard sign-in")
    browse(driver, "posts")
    unlabelled = driver.execute_script("""
        return Array.from(document.querySelectorAll('input, textarea, select, button'))
          .filter((e) => !(e.labels && e.labels.length) && !e.getAttribute('aria-label') && !e.textContent.trim())
          .map((e) => e.outerHTML.slice(0, 80));
    """)
    assert unlabelled == [], unlabelled


def screenshots(driver):
    sign_in_as_admin(driver)
    browse(driver, "posts")
    driver.set_window_size(1280, 900)
    driver.save_screenshot(os.path.join(SCREENSHOTS, "console-desktop.png"))
    driver.set_window_size(375, 812)
    wait_for(driver, lambda d: d.execute_script("return window.innerWidth") <= 375, "the narrow window")
    overflow = driver.execute_script("return document.documentElement.scrollWidth - window.innerWidth")
    assert overflow <= 0, "the page is %d px wider than a 375 px screen" % overflow
    driver.save_screenshot(os.path.join(SCREENSHOTS, "console-375.png"))
    driver.set_window_size(1280, 900)


_admin_token = []


def admin_token():
    if not _admin_token:
        status, answer = request("POST", "/login", {"email": ADMIN[0], "password": ADMIN[1]})
        assert status == 200, answer
        _admin_token.append(answer["accessToken"])
    return _admin_token[0]


CHECKS = [anonymous_is_refused, a_non_admin_is_refused, the_admin_browses_filters_and_edits,
          the_edit_shows_in_the_live_feed_of_a_second_tab, a_role_is_changed, a_password_is_reset,
          the_sync_view_shows_streams_writes_and_a_users_changes, the_rules_view_explains_a_row, the_rules_view_explains_a_shared_row,
          the_health_view_charts_the_metrics, a_backup_downloads,
          hostile_records_render_as_text,
          keyboard_and_labels, screenshots]


def main():
    # The server may still be starting.
    WebDriverWait(None, WAIT, ignored_exceptions=(OSError,)).until(
        lambda _: request("GET", "/openapi.json")[0] == 200, message="the server did not start")
    passed, failed = 0, 0
    for check in CHECKS:
        profile = tempfile.mkdtemp(prefix="modelsync-chromium-")
        driver = new_driver(profile)
        try:
            check(driver)
            assert no_script_ran(driver), "a script of the data ran"
            passed += 1
            print("passed: " + check.__name__, flush=True)
        except Exception:
            failed += 1
            print("FAILED: " + check.__name__, flush=True)
            traceback.print_exc()
            try:
                driver.save_screenshot(os.path.join(SCREENSHOTS, "console-failed-%s.png" % check.__name__))
            except Exception:
                pass
        finally:
            driver.quit()
            shutil.rmtree(profile, ignore_errors=True)
    print("%d passed, %d failed" % (passed, failed), flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
