import Foundation
import HTTPTypes
import Hummingbird
import ModelSyncJSON
import NIOCore

/// The browser console (`GET /_console`): a page, its script and its style sheet, all inside the
/// binary. The page holds no data: its script reads and writes through the documented API with
/// the admin's token in an `Authorization` header (never a cookie, so no other site can send a
/// request as the admin), and the API refuses what the caller may not do.
package enum ConsoleAsset: CaseIterable, Sendable {
    case page, script, style

    /// Where the server serves the asset.
    package var path: String {
        switch self {
        case .page: "/_console"
        case .script: "/_console/console.js"
        case .style: "/_console/console.css"
        }
    }

    package var contentType: String {
        switch self {
        case .page: "text/html; charset=utf-8"
        case .script: "text/javascript; charset=utf-8"
        case .style: "text/css; charset=utf-8"
        }
    }

    /// The asset's bytes on a server with access rules (`accessRules`) or without: the page tells
    /// its script which, and the accounts collection's name.
    package func bytes(accessRules: Bool, accountsCollection: String) -> [UInt8] {
        switch self {
        case .page:
            let attributes = "data-access=\"\(accessRules ? "rules" : "open")\" data-accounts=\"\(Self.attributeEscaped(accountsCollection))\""
            return Array(ConsoleText.page.replacingOccurrences(of: "data-console-settings", with: attributes).utf8)
        case .script: return Array(ConsoleText.script.utf8)
        case .style: return Array(ConsoleText.style.utf8)
        }
    }

    /// Text made safe inside a double-quoted HTML attribute.
    static func attributeEscaped(_ text: String) -> String {
        var escaped = ""
        for character in text {
            switch character {
            case "&": escaped += "&amp;"
            case "\"": escaped += "&quot;"
            case "'": escaped += "&#39;"
            case "<": escaped += "&lt;"
            case ">": escaped += "&gt;"
            default: escaped.append(character)
            }
        }
        return escaped
    }

    /// The Content-Security-Policy of every console answer: scripts, styles and requests only
    /// from the server itself, no inline script or style, no plugin, no frame around it, and
    /// (Trusted Types) no HTML parsed from strings by the script, so that data can only ever
    /// become text.
    package static let contentSecurityPolicy = [
        "default-src 'self'", "script-src 'self'", "style-src 'self'", "img-src 'self'", "connect-src 'self'", "object-src 'none'",
        "base-uri 'none'", "form-action 'self'", "frame-ancestors 'none'", "require-trusted-types-for 'script'", "trusted-types 'none'",
    ].joined(separator: "; ")

    /// The headers of every console answer: the policy, and the older headers that say the same
    /// to browsers without it (no sniffing a type, no frame, no referrer, no other window).
    static let securityHeaders: [HTTPField] = [
        ("Content-Security-Policy", contentSecurityPolicy), ("X-Content-Type-Options", "nosniff"), ("Cache-Control", "no-cache"),
        ("Referrer-Policy", "no-referrer"), ("X-Frame-Options", "DENY"), ("Cross-Origin-Opener-Policy", "same-origin"),
        ("Cross-Origin-Resource-Policy", "same-origin"),
    ].compactMap { name, value in HTTPField.Name(name).map { HTTPField(name: $0, value: value) } }
}

/// Who may load the console.
package enum ConsolePolicy {
    /// Whether the console answers a request: always on a server with access rules (there the
    /// API behind it answers admins only), otherwise only to a client on this machine that also
    /// named this machine in `Host` (a page of another site, whose name was made to point here,
    /// names that site instead).
    ///
    /// - Parameters:
    ///   - accessRules: Whether the server has access rules.
    ///   - clientAddress: The client's IP address, without the port; nil when unknown.
    ///   - host: The request's `Host` (its authority), port included or not.
    ///   - forwarded: Whether the request carries `Forwarded` or `X-Forwarded-For`: a proxy on
    ///     this machine passed it on from a client whose address the server does not see.
    package static func admits(accessRules: Bool, clientAddress: String?, host: String?, forwarded: Bool = false) -> Bool {
        if accessRules { return true }
        guard let clientAddress, let host, !forwarded else { return false }
        return isLoopback(address: clientAddress) && isLoopback(host: host)
    }

    /// Whether a request came through a proxy that said so (`Forwarded`, `X-Forwarded-For`).
    package static func isForwarded(_ headers: HTTPFields) -> Bool {
        ["Forwarded", "X-Forwarded-For"].contains { name in HTTPField.Name(name).map { headers[$0] != nil } ?? false }
    }

    /// Whether an IP address is a loopback address: 127.0.0.0/8, ::1, or 127.x mapped to IPv6.
    package static func isLoopback(address: String) -> Bool {
        let address = address.lowercased()
        if address == "::1" || address == "0:0:0:0:0:0:0:1" { return true }
        let v4 = address.hasPrefix("::ffff:") ? String(address.dropFirst(7)) : address
        let parts = v4.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4, parts.allSatisfy({ !$0.isEmpty && $0.count <= 3 && $0.allSatisfy(\.isASCII) && UInt8($0) != nil }) else { return false }
        return parts[0] == "127"
    }

    /// Whether a `Host` names this machine by a loopback name or address.
    package static func isLoopback(host: String) -> Bool {
        let host = host.lowercased()
        let name: Substring
        if host.hasPrefix("[") {
            guard let end = host.firstIndex(of: "]") else { return false }
            let rest = host[host.index(after: end)...]
            guard rest.isEmpty || (rest.first == ":" && rest.dropFirst().allSatisfy(\.isNumber)) else { return false }
            name = host[host.index(after: host.startIndex)..<end]
        } else {
            let parts = host.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
            guard let first = parts.first else { return false }
            if parts.count == 2, !parts[1].allSatisfy(\.isNumber) { return false }
            name = first
        }
        return name == "localhost" || name.hasSuffix(".localhost") || isLoopback(address: String(name))
    }

    /// The refusal of a request the console does not answer.
    static let refusal = APIError(
        status: .forbidden,
        message: "this server has no access rules, so its console and admin routes (/_console, /_admin, /_metrics) answer only this machine (loopback, as http://127.0.0.1 or http://localhost), and no request a proxy forwarded (Forwarded, X-Forwarded-For); start it with access rules, and use an admin's token, to reach them from elsewhere"
    )
}

extension ServerRoutes {
    /// `GET /_console` and its assets.
    package var consoleRoutes: [Route] {
        let accessRules = options.access != nil
        let accounts = options.access?.rules.accountsCollection ?? "users"
        return ConsoleAsset.allCases.map { asset in
            let bytes = asset.bytes(accessRules: accessRules, accountsCollection: accounts)
            let handler: Handler = { request, context in
                guard ConsolePolicy.admits(
                    accessRules: accessRules, clientAddress: context.remoteAddress?.ipAddress, host: request.head.authority,
                    forwarded: ConsolePolicy.isForwarded(request.headers))
                else {
                    throw ConsolePolicy.refusal
                }
                var headers = HTTPFields()
                headers[.contentType] = asset.contentType
                headers.append(contentsOf: ConsoleAsset.securityHeaders)
                if request.method == .head { return Response(status: .ok, headers: headers) }
                return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: bytes)))
            }
            return Route(path: asset.path, handlers: [.get: handler, .head: handler])
        } + (options.access.map(accessExplanationRoutes) ?? []) + adminRoutes
    }
}

extension OpenAPIDocument {
    /// Adds the console's paths, the access explanation's (``AccessExplanation``) and
    /// `GET /_accounts/{id}/role` to the document's `paths`.
    static func addConsolePaths(to paths: inout JSONObject) {
        for (path, item) in consolePaths { paths[path] = item }
        for (path, item) in accessExplanationPaths { paths[path] = item }
        addAdminPaths(to: &paths)
        guard var role = paths["/_accounts/{id}/role"]?.objectValue else { return }
        role["get"] = [
            "operationId": "readRole", "x-modelsync-requires": "accounts", "summary": "An account's role (admins only)",
            "responses": [
                "200": ["description": "the account's role now", "content": ["application/json": ["schema": ["$ref": "#/components/schemas/RoleAnswer"]]]],
                "401": ["$ref": "#/components/responses/Unauthorized"], "403": ["$ref": "#/components/responses/Forbidden"],
                "404": ["$ref": "#/components/responses/NotFound"], "405": ["$ref": "#/components/responses/MethodNotAllowed"],
            ],
        ]
        paths["/_accounts/{id}/role"] = .object(role)
    }

    /// The console's paths (`ConsoleAsset`): not API, but served, so documented.
    static var consolePaths: JSONObject {
        var paths = JSONObject()
        for asset in ConsoleAsset.allCases {
            let mediaType = String(asset.contentType.prefix { $0 != ";" })
            let name = asset.path.split(separator: "/").last.map(String.init) ?? "console"
            let refused: JSONValue = [
                "description": "A server without access rules answers its console only to this machine (loopback)",
                "content": ["application/json": ["schema": ["$ref": "#/components/schemas/Error"]]],
            ]
            let unauthorized: JSONValue = ["$ref": "#/components/responses/Unauthorized"]
            let operationID = name.replacingOccurrences(of: ".", with: "_")
            var content = JSONObject()
            content[mediaType] = ["schema": ["type": "string"]]
            paths[asset.path] = [
                "get": [
                    "operationId": .string("readConsole_" + operationID),
                    "summary": .string(asset == .page ? "The browser console for admins (docs: README, Console)" : "An asset of the browser console"),
                    "responses": ["200": ["description": "the asset", "content": .object(content)], "401": unauthorized, "403": refused],
                ],
                "head": [
                    "operationId": .string("headConsole_" + operationID), "summary": "The headers GET answers",
                    "responses": ["200": ["description": "the headers"], "401": unauthorized, "403": refused],
                ],
                "options": [
                    "operationId": .string("preflightConsole_" + operationID), "summary": "CORS preflight",
                    "responses": ["204": ["description": "the CORS headers"], "401": unauthorized],
                ],
            ]
        }
        return paths
    }
}
