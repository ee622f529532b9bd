import Foundation
import ModelSync

/// The recorded exchanges of a ``CassetteTransport``, and their file format: pretty-printed
/// JSON that reads well in a diff.
///
/// ```json
/// {
///   "interactions": [
///     {
///       "request": { "method": "GET", "url": "http://127.0.0.1:3000/posts/1",
///                    "headers": ["Accept: application/json", "Authorization: <redacted>"] },
///       "response": { "status": 200, "headers": ["Content-Type: application/json"],
///                     "body": { "id": 1, "title": "Hello" } }
///     }
///   ]
/// }
/// ```
///
/// A body that is JSON is stored as JSON (and replayed compactly), other UTF-8 text as
/// `"bodyText"`, anything else as `"bodyBase64"`.
struct Cassette: Sendable {
    /// One request and the response it got.
    struct Interaction: Sendable {
        var method: String
        var url: String
        var requestHeaders: HeaderFields
        var requestBody: [UInt8]?
        var response: RemoteResponse
    }

    var interactions: [Interaction] = []

    /// The value written in place of a redacted header's value.
    static let redacted = "<redacted>"

    // MARK: Reading

    init() {}

    /// Reads a cassette file.
    init(contentsOf file: URL) throws {
        let bytes: [UInt8]
        do {
            bytes = Array(try Data(contentsOf: file))
        } catch {
            throw CassetteError.unreadableCassette(path: file.path, reason: error.localizedDescription)
        }
        do {
            let root = try JSONValue(parsing: bytes)
            guard let list = root["interactions"]?.arrayValue else { throw Malformed("no \"interactions\" array") }
            interactions = try list.enumerated().map { index, item in
                guard let request = item["request"], let response = item["response"],
                    let method = request["method"]?.stringValue, let url = request["url"]?.stringValue,
                    let status = response["status"]?.intValue
                else { throw Malformed("interaction \(index) lacks request.method, request.url or response.status") }
                return Interaction(
                    method: method, url: url,
                    requestHeaders: try Self.headers(request["headers"], index),
                    requestBody: try Self.body(of: request, index),
                    response: RemoteResponse(
                        status: status, headers: try Self.headers(response["headers"], index),
                        body: try Self.body(of: response, index) ?? []))
            }
        } catch let error as Malformed {
            throw CassetteError.unreadableCassette(path: file.path, reason: error.reason)
        } catch {
            throw CassetteError.unreadableCassette(path: file.path, reason: String(describing: error))
        }
    }

    private struct Malformed: Error {
        var reason: String
        init(_ reason: String) { self.reason = reason }
    }

    private static func headers(_ value: JSONValue?, _ index: Int) throws -> HeaderFields {
        guard let lines = value?.arrayValue else { return HeaderFields() }
        return HeaderFields(try lines.map { line in
            guard let text = line.stringValue, let colon = text.firstIndex(of: ":") else {
                throw Malformed("interaction \(index) has a header that is not \"Name: value\"")
            }
            return (String(text[..<colon]), String(text[text.index(after: colon)...].drop { $0 == " " }))
        })
    }

    private static func body(of message: JSONValue, _ index: Int) throws -> [UInt8]? {
        if let json = message["body"] { return json.jsonBytes() }
        if let text = message["bodyText"]?.stringValue { return Array(text.utf8) }
        if let base64 = message["bodyBase64"]?.stringValue {
            guard let data = Data(base64Encoded: base64) else { throw Malformed("interaction \(index) has invalid bodyBase64") }
            return Array(data)
        }
        return nil
    }

    // MARK: Writing

    /// The file's bytes, with the values of `redactedHeaders` (lower-cased names) replaced.
    func encoded(redacting redactedHeaders: Set<String>) -> [UInt8] {
        func headers(_ fields: HeaderFields) -> JSONValue {
            .array(fields.map { field in
                .string("\(field.name): \(redactedHeaders.contains(field.name.lowercased()) ? Self.redacted : field.value)")
            })
        }
        func message(_ members: [(String, JSONValue)], body: [UInt8]?) -> JSONValue {
            var object = JSONObject(members)
            if let body, !body.isEmpty {
                if let json = try? JSONValue(parsing: body) {
                    object["body"] = json
                } else if let text = String(bytes: body, encoding: .utf8) {
                    object["bodyText"] = .string(text)
                } else {
                    object["bodyBase64"] = .string(Data(body).base64EncodedString())
                }
            }
            return .object(object)
        }
        let list = interactions.map { interaction -> JSONValue in
            [
                "request": message(
                    [("method", .string(interaction.method)), ("url", .string(interaction.url)),
                     ("headers", headers(interaction.requestHeaders))],
                    body: interaction.requestBody),
                "response": message(
                    [("status", JSONValue(integerLiteral: interaction.response.status)),
                     ("headers", headers(interaction.response.headers))],
                    body: interaction.response.body),
            ]
        }
        var bytes = JSONWriter.prettyPrinted(JSONValue.object(["interactions": .array(list)]).jsonBytes())
        bytes.append(UInt8(ascii: "\n"))
        return bytes
    }
}
