import Foundation
import ModelSyncJSON
@testable import ModelSyncServer
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
