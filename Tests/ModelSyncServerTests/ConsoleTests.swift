import Foundation
import ModelSyncJSON
@testable import ModelSyncServer
import ServerTestSupport
import Testing

/// The browser console (`GET /_console`): its assets come from the binary with their types and a
/// strict policy, it answers only on loopback without access rules, and under rules the API
/// behind it refuses everyone but admins. `.ci/browser` drives it in Chromium.
@Suite struct ConsoleTests {
    static let assets: [(path: String, type: String)] = [
        ("/_console", "text/html; charset=utf-8"), ("/_console/console.js", "text/javascript; charset=utf-8"),
        ("/_console/console.css", "text/css; charset=utf-8"),
    ]

    @Test(arguments: Backend.allCases) func theAssetsAreServedWithTheirTypesAndAStrictPolicy(backend: Backend) async throws {
        try await withServer(backend: backend) { _, base in
            for (path, type) in Self.assets {
                let reply = try await send(.GET, base + path)
                #expect(reply.status == 200, "GET \(path)")
                #expect(reply.header("Content-Type") == type, "GET \(path)")
                #expect(reply.header("X-Content-Type-Options") == "nosniff")
                #expect(reply.header("X-Frame-Options") == "DENY")
                let policy = try #require(reply.header("Content-Security-Policy"), "GET \(path)")
                for directive in ["default-src 'self'", "script-src 'self'", "style-src 'self'", "frame-ancestors 'none'", "object-src 'none'", "require-trusted-types-for 'script'"] {
                    #expect(policy.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }.contains(directive), "\(path): \(directive)")
                }
                #expect(!policy.contains("unsafe-inline") && !policy.contains("unsafe-eval"))
                #expect(!reply.body.isEmpty)
                let head = try await send(.HEAD, base + path)
                #expect(head.status == 200 && head.body.isEmpty && head.header("Content-Type") == type, "HEAD \(path)")
            }
            #expect(try await send(.POST, base + "/_console", body: "{}").status == 405)
            let page = String(decoding: try await send(.GET, base + "/_console").body, as: UTF8.self)
            #expect(page.contains(#"data-access="open""#))
        }
    }

    /// No inline script or style for the policy to refuse, no handler attribute, and no way for
    /// the script to turn text into HTML.
    @Test func thePageHasNoInlineScriptAndTheScriptWritesNoHTML() throws {
        let page = String(decoding: ConsoleAsset.page.bytes(accessRules: true, accountsCollection: "users"), as: UTF8.self)
        #expect(page.components(separatedBy: "<script").count == 2 && page.contains(#"<script src="/_console/console.js" defer></script>"#))
        #expect(!page.contains("<style") && !page.contains(" style="))
        #expect(page.range(of: #"\son[a-z]+="#, options: .regularExpression) == nil)
        for sink in ["innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function", "localStorage", "sessionStorage", "document.cookie"] {
            #expect(!ConsoleText.script.contains(sink), "the script uses \(sink)")
        }
    }

    @Test func theAccountsCollectionIsEscapedIntoThePage() {
        let page = String(decoding: ConsoleAsset.page.bytes(accessRules: false, accountsCollection: #"a"><script>x</script>"#), as: UTF8.self)
        #expect(page.contains(#"data-accounts="a&quot;&gt;&lt;script&gt;x&lt;/script&gt;""#))
        #expect(ConsoleAsset.attributeEscaped("a&'b") == "a&amp;&#39;b")
    }

    /// Without access rules only a client on this machine that names this machine gets the
    /// console (a page whose own name was made to point here names that name instead).
    @Test func withoutRulesTheConsoleIsOpenOnlyOnLoopback() {
        for address in ["127.0.0.1", "127.5.6.7", "::1", "::ffff:127.0.0.1"] {
            #expect(ConsolePolicy.admits(accessRules: false, clientAddress: address, host: "localhost:8080"), "\(address)")
        }
        for host in ["127.0.0.1", "127.0.0.1:80", "localhost", "LOCALHOST:1", "[::1]:8080", "[::1]", "app.localhost"] {
            #expect(ConsolePolicy.admits(accessRules: false, clientAddress: "127.0.0.1", host: host), "\(host)")
        }
        for address in ["10.0.0.2", "192.168.1.1", "::2", "fe80::1", "::ffff:10.0.0.1", "1127.0.0.1", "127.0.0", "", "unknown"] {
            #expect(!ConsolePolicy.admits(accessRules: false, clientAddress: address, host: "localhost"), "\(address)")
        }
        for host in ["evil.example", "127.0.0.1.evil.example", "localhost.evil.example", "[::1]x", "localhost:x", "10.0.0.1:80", ""] {
            #expect(!ConsolePolicy.admits(accessRules: false, clientAddress: "127.0.0.1", host: host), "\(host)")
        }
        #expect(!ConsolePolicy.admits(accessRules: false, clientAddress: nil, host: "localhost"))
        #expect(!ConsolePolicy.admits(accessRules: false, clientAddress: "127.0.0.1", host: nil))
        // With rules the page is served anywhere: it holds no data, and the API answers admins only.
        #expect(ConsolePolicy.admits(accessRules: true, clientAddress: "10.0.0.2", host: "evil.example"))
    }

    @Test func aRequestNamingAnotherHostIsRefusedWithoutRules() async throws {
        try await withServer { _, base in
            let refused = try await send(.GET, base + "/_console", headers: [("Host", "evil.example")])
            #expect(refused.status == 403)
            #expect(refused.json?["error"]?.stringValue?.contains("loopback") == true)
        }
    }

    /// Under access rules the page is served to anyone (it holds no data), and what it reads, the
    /// whole data (`/db`) and the roles, is refused to anonymous callers (401) and signed-in
    /// non-admins (403); the page shows those refusals (`.ci/browser`).
    @Test(arguments: Backend.allCases) func underRulesOnlyAnAdminGetsTheConsolesData(backend: Backend) async throws {
        try await withServer(options: try AccessTests.options(), backend: backend) { _, base in
            let page = try await send(.GET, base + "/_console")
            #expect(page.status == 200)
            #expect(String(decoding: page.body, as: UTF8.self).contains(#"data-access="rules" data-accounts="users""#))
            let callers: [(token: String?, status: Int)] = [(nil, 401), ("test:1:", 403), ("test:1:editor", 403), ("test:9:admin", 200)]
            for (token, status) in callers {
                let headers = token.map { [("Authorization", "Bearer \($0)")] } ?? []
                #expect(try await send(.GET, base + "/db", headers: headers).status == status, "GET /db as \(token ?? "anonymous")")
                let role = try await send(.PUT, base + "/_accounts/1/role", body: #"{"role": "admin"}"#, headers: headers).status
                #expect(role == (status == 200 ? 404 : status), "PUT role as \(token ?? "anonymous")")
            }
        }
    }
}

/// The rules view's answer (`GET /_access/check`): whether a user may read and write a row, as
/// the server enforces it, and which rule and digit decide; admins only.
@Suite struct AccessExplanationTests {
    static let rules: JSONValue = ["posts": ["mode": 640, "roles": ["editor": 664]], "notes": 600, "profile": 644]
    static let post: JSONValue = ["id": 7, "userId": 1, "title": "Ann's card"]

    func check(_ collection: String = "posts", user: String?, role: String? = nil) throws -> JSONValue {
        AccessExplanation(rules: try AccessRules(json: Self.rules)).check(collection: collection, record: Self.post, user: user, role: role)
    }

    @Test func theAnswerSaysWhichDigitDecides() throws {
        let owner = try check(user: "1")
        #expect(owner["read"] == true && owner["write"] == true && owner["rule"] == "posts" && owner["mode"] == "640")
        #expect(owner["reasons"]?["write"]?.stringValue?.contains("user 1 owns it (userId is 1)") == true)
        let other = try check(user: "2")
        #expect(other["read"] == true && other["write"] == false)
        #expect(other["reasons"]?["read"]?.stringValue?.contains("signed-in digit (4)") == true)
        #expect(other["reasons"]?["write"]?.stringValue?.contains("userId is 1, not user 2") == true)
        let anonymous = try check(user: nil)
        #expect(anonymous["read"] == false && anonymous["write"] == false && anonymous["user"] == .null)
        #expect(anonymous["reasons"]?["read"]?.stringValue?.contains("anonymous callers may not read") == true)
        let editor = try check(user: "2", role: "editor")
        #expect(editor["write"] == true && editor["mode"] == "664")
        #expect(editor["reasons"]?["write"]?.stringValue?.contains("role editor") == true)
        let unnamed = try check("secrets", user: "1")
        #expect(unnamed["read"] == false && unnamed["reasons"]?["read"]?.stringValue?.contains("only admins") == true)
        let admin = try check("secrets", user: "9", role: "admin")
        #expect(admin["read"] == true && admin["write"] == true)
    }

    /// The yes and no are the server's own: every caller's answer matches what `GET` and
    /// `PATCH` of the row answer that caller.
    @Test(arguments: Backend.allCases) func theAnswerIsWhatTheServerEnforces(backend: Backend) async throws {
        let access = AccessControl(rules: try AccessRules(json: Self.rules), tokens: TestTokens(), accounts: BuiltInAccounts(issuer: TestTokens(), passwords: TestPasswords()))
        let data: JSONValue = ["users": [], "posts": [Self.post], "profile": ["name": "x"]]
        try await withServer(data, options: ServerOptions(access: access), backend: backend) { _, base in
            let admin = [("Authorization", "Bearer test:9:admin")]
            for (user, role) in [("1", ""), ("2", ""), ("2", "editor"), ("", "")] {
                var url = base + "/_access/check?collection=posts&id=7"
                if !user.isEmpty { url += "&user=\(user)" }
                if !role.isEmpty { url += "&role=\(role)" }
                let answer = try await send(.GET, url, headers: admin)
                #expect(answer.status == 200, "\(url)")
                let headers = user.isEmpty ? [] : [("Authorization", "Bearer test:\(user):\(role)")]
                let read = try await send(.GET, base + "/posts/7", headers: headers).status == 200
                let write = try await send(.PATCH, base + "/posts/7", body: #"{"title": "Ann's card"}"#, headers: headers).status == 200
                #expect(answer.json?["read"] == .bool(read) && answer.json?["write"] == .bool(write), "user \(user) role \(role): \(answer.json ?? .null)")
            }
            let rules = try await send(.GET, base + "/_access/rules", headers: admin)
            #expect(rules.status == 200 && rules.json?["rules"]?["posts"]?["roles"]?["editor"] == "664" && rules.json?["accountsRule"]?["mode"] == "600")
            #expect(try await send(.HEAD, base + "/_access/rules", headers: admin).body.isEmpty)
            for (path, status) in [("/_access/check?collection=posts", 400), ("/_access/check?collection=posts&id=99", 404), ("/_access/check?collection=profile&id=1", 404)] {
                #expect(try await send(.GET, base + path, headers: admin).status == status, "\(path)")
            }
            for path in ["/_access/rules", "/_access/check?collection=posts&id=7", "/_accounts/1/role"] {
                #expect(try await send(.GET, base + path).status == 401, "\(path) anonymous")
                #expect(try await send(.GET, base + path, headers: [("Authorization", "Bearer test:1:")]).status == 403, "\(path) as a user")
            }
            // An account's role, as the Users view shows it.
            let registered = try await send(.POST, base + "/register", body: #"{"email": "ann@example.com", "password": "correct horse"}"#)
            let id = try #require(registered.json?["user"]?["id"].flatMap(scalarText))
            #expect(try await send(.GET, base + "/_accounts/\(id)/role", headers: admin).json?["role"] == .null)
            #expect(try await send(.PUT, base + "/_accounts/\(id)/role", body: #"{"role": "editor"}"#, headers: admin).status == 200)
            #expect(try await send(.GET, base + "/_accounts/\(id)/role", headers: admin).json == ["id": .string(id), "role": "editor"])
            #expect(try await send(.GET, base + "/_accounts/999/role", headers: admin).status == 404)
            // The account's role answers for it when the question names none.
            let asAccount = try await send(.GET, base + "/_access/check?collection=posts&id=7&user=\(id)", headers: admin)
            #expect(asAccount.json?["role"] == "editor" && asAccount.json?["write"] == true)
        }
    }

    @Test func withoutRulesThereIsNoExplanation() async throws {
        try await withServer { _, base in
            let rules = try await send(.GET, base + "/_access/rules")
            #expect(rules.status == 404)
            #expect(try await send(.GET, base + "/_access/check?collection=posts&id=1").status == 404)
        }
    }
}
