import Foundation
import JWTKit
import ModelSyncServer
import ModelSyncServerAuth
import Testing

/// Tokens as the server will meet them: its own, other issuers', forged, expired and hostile.
@Suite struct JWTAccessTokensTests {
    static let secret = Data("modelsync-test-secret-0123456789abcdef".utf8)
    static let otherSecret = Data("another-secret-of-enough-length-0123456789".utf8)
    static let hs256Header = #"{"alg":"HS256","typ":"JWT"}"#

    static var now: Int { Int(Date().timeIntervalSince1970) }
    static var inAnHour: Int { now + 3600 }

    /// `header.payload.signature`, the first two base64url-encoded as they are.
    static func token(header: String, payload: String, signature: String = "") -> String {
        base64url(Data(header.utf8)) + "." + base64url(Data(payload.utf8)) + "." + signature
    }

    static func base64url(_ data: Data) -> String {
        data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// A token over any header and payload, signed by the default key of `keys` through jwt-kit:
    /// payloads jwt-kit's own `sign` would not write (not JSON, odd claims).
    static func signed(header: String = hs256Header, payload: String, with keys: JWTKeyCollection) async throws -> String {
        let input = base64url(Data(header.utf8)) + "." + base64url(Data(payload.utf8))
        let signature = try await keys.getKey().sign(Array(input.utf8))
        return input + "." + base64url(Data(signature))
    }

    static func hs256(_ payload: String, secret: Data = secret) async throws -> String {
        try await signed(payload: payload, with: JWTKeyCollection().add(hmac: HMACKey(from: secret), digestAlgorithm: .sha256))
    }

    /// The error `caller(for:)` throws, or nil when it accepts the token.
    static func refusal(_ token: String, by tokens: JWTAccessTokens) async -> AccessTokenError? {
        do {
            _ = try await tokens.caller(for: token)
            return nil
        } catch {
            return error
        }
    }

    // MARK: Issue and verify

    @Test func anIssuedTokenNamesItsUserAndRole() async throws {
        let tokens = try await JWTAccessTokens(secret: Self.secret)
        let caller = try await tokens.caller(for: tokens.accessToken(for: "42", role: "editor"))
        #expect(caller == Caller(userID: "42", role: "editor"))
        let noRole = try await tokens.caller(for: tokens.accessToken(for: "7", role: nil))
        #expect(noRole == Caller(userID: "7", role: nil))
        #expect(tokens.algorithms == ["HS256"])
    }

    @Test func anIssuedTokenCarriesItsClaims() async throws {
        let tokens = try await JWTAccessTokens(
            secret: Self.secret, issuer: "https://auth.example.com", audience: "notes", roleClaim: "https://example.com/role",
            lifetime: .seconds(900)
        )
        let token = try await tokens.accessToken(for: "u1", role: "admin")
        let parts = token.split(separator: ".")
        #expect(parts.count == 3)
        var payload = String(parts[1]).replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        payload += String(repeating: "=", count: (4 - payload.count % 4) % 4)
        let json = try #require(Data(base64Encoded: payload))
        let claims = try #require(try JSONSerialization.jsonObject(with: json) as? [String: Any])
        #expect(claims["sub"] as? String == "u1")
        #expect(claims["https://example.com/role"] as? String == "admin")
        #expect(claims["iss"] as? String == "https://auth.example.com")
        #expect(claims["aud"] as? String == "notes")
        let issuedAt = try #require(claims["iat"] as? Int)
        #expect(try #require(claims["exp"] as? Int) == issuedAt + 900)
        #expect(abs(issuedAt - Self.now) < 5)
        #expect(try await tokens.caller(for: token) == Caller(userID: "u1", role: "admin"))
    }

    /// HS256 with the same secret by another implementation (openssl, at the shell) verifies.
    @Test func aTokenMintedElsewhereWithTheSameSecretVerifies() async throws {
        let tokens = try await JWTAccessTokens(secret: Self.secret)
        let minted =
            "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiI0MiIsInJvbGUiOiJlZGl0b3IiLCJpYXQiOjE3MDAwMDAwMDAsImV4cCI6NDEwMjQ0NDgwMH0.qLGenJiPJLqQMHv_rHnrwTpFGaP57DL4ZAPS8yjGYJE"
        #expect(try await tokens.caller(for: minted) == Caller(userID: "42", role: "editor"))
        // And one that jwt-kit signs with its own claim types.
        struct Payload: JWTPayload {
            var sub: SubjectClaim
            var exp: ExpirationClaim
            func verify(using algorithm: some JWTAlgorithm) async throws {}
        }
        let keys = await JWTKeyCollection().add(hmac: HMACKey(from: Self.secret), digestAlgorithm: .sha256)
        let jwtKitToken = try await keys.sign(Payload(sub: "9", exp: .init(value: Date().addingTimeInterval(60))))
        #expect(try await tokens.caller(for: jwtKitToken) == Caller(userID: "9"))
    }

    // MARK: Forged tokens

    @Test func aTokenSignedWithAnotherSecretIsABadSignature() async throws {
        let tokens = try await JWTAccessTokens(secret: Self.secret)
        let other = try await JWTAccessTokens(secret: Self.otherSecret)
        #expect(await Self.refusal(try await other.accessToken(for: "42", role: "admin"), by: tokens) == .badSignature)
    }

    @Test func algNoneIsRefused() async throws {
        let tokens = try await JWTAccessTokens(secret: Self.secret)
        let payload = #"{"sub":"42","role":"admin","exp":\#(Self.inAnHour)}"#
        #expect(await Self.refusal(Self.token(header: #"{"alg":"none","typ":"JWT"}"#, payload: payload), by: tokens) == .unsupportedAlgorithm("none"))
        #expect(await Self.refusal(Self.token(header: #"{"alg":"None"}"#, payload: payload), by: tokens) == .unsupportedAlgorithm("None"))
        // A valid HS256 signature under a header that says none is still none.
        let valid = try await Self.hs256(payload).split(separator: ".")
        let relabeled = Self.token(header: #"{"alg":"none"}"#, payload: payload, signature: String(valid[2]))
        #expect(await Self.refusal(relabeled, by: tokens) == .unsupportedAlgorithm("none"))
        // No alg at all.
        #expect(await Self.refusal(Self.token(header: #"{"typ":"JWT"}"#, payload: payload), by: tokens) == .malformed)
    }

    @Test func anAlgorithmNotConfiguredIsRefused() async throws {
        let tokens = try await JWTAccessTokens(secret: Self.secret)
        let payload = #"{"sub":"42","exp":\#(Self.inAnHour)}"#
        let hs512 = try await Self.signed(
            header: #"{"alg":"HS512"}"#, payload: payload,
            // (jwt-kit asserts that an HS512 key has 64 bytes.)
            with: JWTKeyCollection().add(hmac: HMACKey(from: Self.secret + Self.secret), digestAlgorithm: .sha512)
        )
        #expect(await Self.refusal(hs512, by: tokens) == .unsupportedAlgorithm("HS512"))
        #expect(await Self.refusal(Self.token(header: #"{"alg":"RS256"}"#, payload: payload, signature: "AAAA"), by: tokens) == .unsupportedAlgorithm("RS256"))
    }

    @Test func aTamperedPayloadIsRefused() async throws {
        let tokens = try await JWTAccessTokens(secret: Self.secret)
        let token = try await tokens.accessToken(for: "42", role: "reader")
        var parts = token.split(separator: ".").map(String.init)
        // One byte of the payload flipped: its JSON may still parse (a bad signature) or not (malformed).
        var payload = Array(parts[1].utf8)
        let middle = payload.count / 2
        payload[middle] = payload[middle] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
        let flipped = [parts[0], String(decoding: payload, as: UTF8.self), parts[2]].joined(separator: ".")
        let refusal = await Self.refusal(flipped, by: tokens)
        #expect(refusal == .badSignature || refusal == .malformed)
        // The role raised to admin, the payload re-encoded, the signature kept.
        parts[1] = Self.base64url(Data(#"{"sub":"42","role":"admin","exp":\#(Self.inAnHour)}"#.utf8))
        #expect(await Self.refusal(parts.joined(separator: "."), by: tokens) == .badSignature)
        // The signature cut short, or gone.
        #expect(await Self.refusal(String(token.dropLast(4)), by: tokens) == .badSignature)
        #expect(await Self.refusal(String(token[..<(token.lastIndex(of: ".") ?? token.endIndex)]) + ".", by: tokens) == .badSignature)
    }

    /// The RS256 public key used as an HS256 secret (the algorithm confusion attack) gets nowhere:
    /// HS256 is not accepted without a secret.
    @Test func thePublicKeyAsAnHMACSecretIsRefused() async throws {
        let rsa = try Insecure.RSA.PrivateKey(pem: rsaTestKeyPEM)
        let tokens = try await JWTAccessTokens(jwks: Self.jwks([Self.rsaJWK(rsa.publicKey, kid: "r1")]), issuer: Self.idp, audience: Self.app)
        let forged = try await Self.signed(
            header: #"{"alg":"HS256","kid":"r1"}"#, payload: #"{"sub":"42","role":"admin","exp":\#(Self.inAnHour)}"#,
            with: JWTKeyCollection().add(hmac: HMACKey(from: Data(rsa.publicKey.pemRepresentation.utf8)), digestAlgorithm: .sha256)
        )
        #expect(await Self.refusal(forged, by: tokens) == .unsupportedAlgorithm("HS256"))
    }

    // MARK: Time

    @Test func anExpiredTokenIsRefusedPastTheLeeway() async throws {
        let tokens = try await JWTAccessTokens(secret: Self.secret, leeway: .seconds(60))
        #expect(await Self.refusal(try await Self.hs256(#"{"sub":"1","exp":\#(Self.now - 3600)}"#), by: tokens) == .expired)
        #expect(await Self.refusal(try await Self.hs256(#"{"sub":"1","exp":\#(Self.now - 61)}"#), by: tokens) == .expired)
        #expect(await Self.refusal(try await Self.hs256(#"{"sub":"1","exp":\#(Self.now - 30)}"#), by: tokens) == nil)
        #expect(await Self.refusal(try await Self.hs256(#"{"sub":"1","exp":-1}"#), by: tokens) == .expired)
        // A fractional NumericDate is one too.
        #expect(await Self.refusal(try await Self.hs256(#"{"sub":"1","exp":\#(Self.inAnHour).5}"#), by: tokens) == nil)
    }

    @Test func aTokenWithoutExpIsRefused() async throws {
        let tokens = try await JWTAccessTokens(secret: Self.secret)
        #expect(await Self.refusal(try await Self.hs256(#"{"sub":"1"}"#), by: tokens) == .malformed)
        #expect(await Self.refusal(try await Self.hs256(#"{"sub":"1","exp":"tomorrow"}"#), by: tokens) == .malformed)
        #expect(await Self.refusal(try await Self.hs256(#"{"sub":"1","exp":null}"#), by: tokens) == .malformed)
    }

    @Test func aTokenNotYetValidIsRefusedPastTheLeeway() async throws {
        let tokens = try await JWTAccessTokens(secret: Self.secret, leeway: .seconds(60))
        let exp = Self.now + 7200
        #expect(await Self.refusal(try await Self.hs256(#"{"sub":"1","exp":\#(exp),"nbf":\#(Self.now + 3600)}"#), by: tokens) == .notYetValid)
        #expect(await Self.refusal(try await Self.hs256(#"{"sub":"1","exp":\#(exp),"nbf":\#(Self.now + 30)}"#), by: tokens) == nil)
        #expect(await Self.refusal(try await Self.hs256(#"{"sub":"1","exp":\#(exp),"nbf":\#(Self.now - 30)}"#), by: tokens) == nil)
    }

    /// `exp` at `Int.max` is a token that has not expired: valid, and no crash on the way.
    @Test func expAtIntMaxIsValid() async throws {
        let tokens = try await JWTAccessTokens(secret: Self.secret)
        #expect(try await tokens.caller(for: Self.hs256(#"{"sub":"1","exp":\#(Int.max)}"#)) == Caller(userID: "1"))
        #expect(try await tokens.caller(for: Self.hs256(#"{"sub":"1","exp":1e300,"nbf":\#(Int.min)}"#)) == Caller(userID: "1"))
        // Beyond any number: malformed, whatever JSON makes of it.
        let huge = await Self.refusal(try await Self.hs256(#"{"sub":"1","exp":1e999}"#), by: tokens)
        #expect(huge == .malformed)
        #expect(await Self.refusal(try await Self.hs256(#"{"sub":"1","exp":\#(Self.inAnHour),"nbf":1e999}"#), by: tokens) == .malformed)
    }

    // MARK: Issuer and audience

    @Test func theIssuerAndAudienceMustMatchWhenConfigured() async throws {
        let tokens = try await JWTAccessTokens(secret: Self.secret, issuer: "https://auth.example.com", audience: "notes")
        let exp = Self.inAnHour
        func refusal(_ claims: String) async throws -> AccessTokenError? {
            await Self.refusal(try await Self.hs256(#"{"sub":"1","exp":\#(exp)\#(claims)}"#), by: tokens)
        }
        #expect(try await refusal(#","iss":"https://auth.example.com","aud":"notes""#) == nil)
        #expect(try await refusal(#","iss":"https://auth.example.com","aud":["other","notes"]"#) == nil)
        #expect(try await refusal(#","iss":"https://evil.example.com","aud":"notes""#) == .wrongIssuerOrAudience)
        #expect(try await refusal(#","aud":"notes""#) == .wrongIssuerOrAudience)
        #expect(try await refusal(#","iss":"https://auth.example.com","aud":"other""#) == .wrongIssuerOrAudience)
        #expect(try await refusal(#","iss":"https://auth.example.com","aud":[]"#) == .wrongIssuerOrAudience)
        #expect(try await refusal(#","iss":"https://auth.example.com""#) == .wrongIssuerOrAudience)
        #expect(try await refusal(#","iss":7,"aud":"notes""#) == .malformed)
        // Without them configured, any issuer and audience pass.
        let open = try await JWTAccessTokens(secret: Self.secret)
        #expect(await Self.refusal(try await Self.hs256(#"{"sub":"1","exp":\#(exp),"iss":"x","aud":"y"}"#), by: open) == nil)
    }

    // MARK: Hostile and broken tokens

    @Test func hostileTokensAreMalformed() async throws {
        let tokens = try await JWTAccessTokens(secret: Self.secret)
        let exp = Self.inAnHour
        // 10 KB: refused before parsing, even though it is validly signed.
        let padding = String(repeating: "x", count: 10 * 1024)
        let long = try await Self.hs256(#"{"sub":"1","exp":\#(exp),"pad":"\#(padding)"}"#)
        #expect(long.utf8.count > 10 * 1024)
        #expect(await Self.refusal(long, by: tokens) == .malformed)
        for token in ["", " ", ".", "..", "...", "a.b", "a.b.c.d", "not a token", "Bearer", "e30.e30.", "%%%.%%%.%%%"] {
            #expect(await Self.refusal(token, by: tokens) == .malformed, "\(token)")
        }
        // Payloads that are not a JSON object, validly signed.
        for payload in ["not json", "", "[1,2]", "\"sub\"", "42", "null", #"{"sub":"1","exp":"#] {
            #expect(await Self.refusal(try await Self.hs256(payload), by: tokens) == .malformed, "\(payload)")
        }
        // A header that is not JSON.
        #expect(await Self.refusal(Self.token(header: "{alg:HS256", payload: #"{"sub":"1","exp":\#(exp)}"#), by: tokens) == .malformed)
        // JSON nested deeply, within the length limit: refused by the JSON parser or skipped as a
        // claim nobody reads, but no crash.
        let deep = String(repeating: "[", count: 2000) + String(repeating: "]", count: 2000)
        let deepArray = await Self.refusal(try await Self.hs256(#"{"sub":"1","exp":\#(exp),"x":\#(deep)}"#), by: tokens)
        #expect(deepArray == nil || deepArray == .malformed)
        let deepObject = String(repeating: #"{"a":"#, count: 600) + "1" + String(repeating: "}", count: 600)
        let deepRole = await Self.refusal(try await Self.hs256(#"{"sub":"1","exp":\#(exp),"role":\#(deepObject)}"#), by: tokens)
        #expect(deepRole == nil || deepRole == .malformed)
        // A critical header extension nobody here understands.
        let critical = try await Self.signed(
            header: #"{"alg":"HS256","crit":["b64"],"b64":false}"#, payload: #"{"sub":"1","exp":\#(exp)}"#,
            with: JWTKeyCollection().add(hmac: HMACKey(from: Self.secret), digestAlgorithm: .sha256)
        )
        #expect(await Self.refusal(critical, by: tokens) == .malformed)
    }

    // MARK: Subject and role

    @Test func theSubjectIsAStringOrAnInteger() async throws {
        let tokens = try await JWTAccessTokens(secret: Self.secret)
        let exp = Self.inAnHour
        #expect(try await tokens.caller(for: Self.hs256(#"{"sub":42,"exp":\#(exp)}"#)).userID == "42")
        #expect(try await tokens.caller(for: Self.hs256(#"{"sub":"user-7","exp":\#(exp)}"#)).userID == "user-7")
        #expect(try await tokens.caller(for: Self.hs256(#"{"sub":-3,"exp":\#(exp)}"#)).userID == "-3")
        for sub in [#","sub":"""#, #","sub":null"#, #","sub":{"id":1}"#, #","sub":[1]"#, #","sub":true"#, #","sub":1.5"#, ""] {
            #expect(await Self.refusal(try await Self.hs256(#"{"exp":\#(exp)\#(sub)}"#), by: tokens) == .noSubject, "\(sub)")
        }
    }

    @Test func theRoleComesFromTheConfiguredClaim() async throws {
        let exp = Self.inAnHour
        let byDefault = try await JWTAccessTokens(secret: Self.secret)
        #expect(try await byDefault.caller(for: Self.hs256(#"{"sub":"1","exp":\#(exp),"role":"admin"}"#)).role == "admin")
        #expect(try await byDefault.caller(for: Self.hs256(#"{"sub":"1","exp":\#(exp)}"#)).role == nil)
        #expect(try await byDefault.caller(for: Self.hs256(#"{"sub":"1","exp":\#(exp),"role":null}"#)).role == nil)
        #expect(try await byDefault.caller(for: Self.hs256(#"{"sub":"1","exp":\#(exp),"role":7}"#)).role == nil)
        #expect(try await byDefault.caller(for: Self.hs256(#"{"sub":"1","exp":\#(exp),"role":["admin"]}"#)).role == nil)
        #expect(try await byDefault.caller(for: Self.hs256(#"{"sub":"1","exp":\#(exp),"user_role":"admin"}"#)).role == nil)

        // Supabase-style: a path into nested objects.
        let nested = try await JWTAccessTokens(secret: Self.secret, roleClaim: "app_metadata.role")
        #expect(
            try await nested.caller(for: Self.hs256(#"{"sub":"1","exp":\#(exp),"role":"authenticated","app_metadata":{"role":"admin"}}"#))
                .role == "admin"
        )
        #expect(try await nested.caller(for: Self.hs256(#"{"sub":"1","exp":\#(exp),"app_metadata":{}}"#)).role == nil)
        #expect(try await nested.caller(for: Self.hs256(#"{"sub":"1","exp":\#(exp),"app_metadata":"admin"}"#)).role == nil)
        #expect(try await nested.caller(for: Self.hs256(#"{"sub":"1","exp":\#(exp),"role":"admin"}"#)).role == nil)
        // Its own token round-trips.
        #expect(try await nested.caller(for: nested.accessToken(for: "1", role: "editor")).role == "editor")

        // Auth0-style: a namespaced claim whose name has dots is read whole.
        let namespaced = try await JWTAccessTokens(secret: Self.secret, roleClaim: "https://example.com/role")
        #expect(try await namespaced.caller(for: Self.hs256(#"{"sub":"1","exp":\#(exp),"https://example.com/role":"editor"}"#)).role == "editor")
    }

    // MARK: Keys from a JWKS

    static func rsaJWK(_ key: Insecure.RSA.PublicKey, kid: String?, alg: String? = "RS256") throws -> String {
        let (modulus, exponent) = try key.getKeyPrimitives()
        var members = [#""kty":"RSA""#, #""use":"sig""#, #""n":"\#(base64url(modulus))""#, #""e":"\#(base64url(exponent))""#]
        if let kid { members.append(#""kid":"\#(kid)""#) }
        if let alg { members.append(#""alg":"\#(alg)""#) }
        return "{" + members.joined(separator: ",") + "}"
    }

    static func ecJWK(_ key: ES256PublicKey, kid: String?) throws -> String {
        let parameters = try #require(key.parameters)
        let kid = kid.map { #","kid":"\#($0)""# } ?? ""
        return #"{"kty":"EC","crv":"P-256","x":"\#(parameters.x)","y":"\#(parameters.y)"\#(kid)}"#
    }

    static let idp = "https://idp.example.com"
    static let app = "modelsync-tests"

    static func jwks(_ keys: [String]) -> Data {
        Data(#"{"keys":[\#(keys.joined(separator: ","))]}"#.utf8)
    }

    @Test func rs256AndES256VerifyWithTheKeyTheirKidNames() async throws {
        let rsa = try Insecure.RSA.PrivateKey(pem: rsaTestKeyPEM)
        let ec = ES256PrivateKey()
        let otherEC = ES256PrivateKey()
        let tokens = try await JWTAccessTokens(
            jwks: Self.jwks([
                // Keys that are skipped: symmetric, encryption, another curve, another algorithm.
                #"{"kty":"oct","k":"c2VjcmV0","kid":"o1"}"#,
                #"{"kty":"RSA","use":"enc","kid":"enc1","n":"AQAB","e":"AQAB"}"#,
                #"{"kty":"EC","crv":"P-384","kid":"p384","x":"AA","y":"AA"}"#,
                #"{"kty":"RSA","alg":"PS256","kid":"pss","n":"AQAB","e":"AQAB"}"#,
                #"{"kty":"OKP","crv":"Ed25519","kid":"ed","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}"#,
                try Self.rsaJWK(rsa.publicKey, kid: "r1"),
                try Self.ecJWK(ec.publicKey, kid: "e1"),
                try Self.ecJWK(otherEC.publicKey, kid: "e2"),
            ]),
            issuer: "https://idp.example.com", audience: Self.app
        )
        #expect(tokens.algorithms == ["RS256", "ES256"])
        let payload = #"{"sub":"auth0|42","role":"editor","iss":"https://idp.example.com","aud":"\#(Self.app)","exp":\#(Self.inAnHour)}"#
        let rsaKeys = await JWTKeyCollection().add(rsa: rsa, digestAlgorithm: .sha256)
        let ecKeys = await JWTKeyCollection().add(ecdsa: ec)

        let rs256 = try await Self.signed(header: #"{"alg":"RS256","kid":"r1","typ":"JWT"}"#, payload: payload, with: rsaKeys)
        #expect(try await tokens.caller(for: rs256) == Caller(userID: "auth0|42", role: "editor"))
        let es256 = try await Self.signed(header: #"{"alg":"ES256","kid":"e1"}"#, payload: payload, with: ecKeys)
        #expect(try await tokens.caller(for: es256) == Caller(userID: "auth0|42", role: "editor"))
        // jwt-kit's own sign, its header and all.
        let signedByJWTKit = try await JWTKeyCollection().add(ecdsa: ec, kid: "e1").sign(Self.ExternalPayload(sub: "5", exp: Self.inAnHour, iss: "https://idp.example.com", aud: Self.app))
        #expect(try await tokens.caller(for: signedByJWTKit) == Caller(userID: "5"))

        // Signed by e1's key, labeled e2: a bad signature.
        #expect(await Self.refusal(try await Self.signed(header: #"{"alg":"ES256","kid":"e2"}"#, payload: payload, with: ecKeys), by: tokens) == .badSignature)
        // A kid the JWKS lacks, and a skipped key's kid.
        #expect(await Self.refusal(try await Self.signed(header: #"{"alg":"ES256","kid":"e3"}"#, payload: payload, with: ecKeys), by: tokens) == .unknownKey)
        #expect(await Self.refusal(try await Self.signed(header: #"{"alg":"RS256","kid":"enc1"}"#, payload: payload, with: rsaKeys), by: tokens) == .unknownKey)
        // The RSA key's kid on an ES256 token.
        #expect(await Self.refusal(try await Self.signed(header: #"{"alg":"ES256","kid":"r1"}"#, payload: payload, with: ecKeys), by: tokens) == .unsupportedAlgorithm("ES256"))
        // No kid: any key for the algorithm may have signed it.
        #expect(try await tokens.caller(for: Self.signed(header: #"{"alg":"ES256"}"#, payload: payload, with: ecKeys)).userID == "auth0|42")
        #expect(try await tokens.caller(for: Self.signed(header: #"{"alg":"RS256"}"#, payload: payload, with: rsaKeys)).userID == "auth0|42")
        // The claims are checked for these too.
        let expired = #"{"sub":"1","iss":"https://idp.example.com","aud":"\#(Self.app)","exp":\#(Self.now - 3600)}"#
        #expect(await Self.refusal(try await Self.signed(header: #"{"alg":"RS256","kid":"r1"}"#, payload: expired, with: rsaKeys), by: tokens) == .expired)
        // Without a secret: HS256 is refused and nothing is issued.
        #expect(await Self.refusal(try await Self.hs256(payload), by: tokens) == .unsupportedAlgorithm("HS256"))
        await #expect(throws: JWTAccessTokens.ConfigurationError.noSigningSecret) { try await tokens.accessToken(for: "1", role: nil) }
    }

    struct ExternalPayload: JWTPayload {
        var sub: String
        var exp: Int
        var iss: String
        var aud: String
        func verify(using algorithm: some JWTAlgorithm) async throws {}
    }

    @Test func aJWKSKeyWithoutKidOrAlgVerifies() async throws {
        let rsa = try Insecure.RSA.PrivateKey(pem: rsaTestKeyPEM)
        let tokens = try await JWTAccessTokens(jwks: Self.jwks([try Self.rsaJWK(rsa.publicKey, kid: nil, alg: nil)]), issuer: Self.idp, audience: Self.app)
        let payload = #"{"sub":"1","iss":"\#(Self.idp)","aud":"\#(Self.app)","exp":\#(Self.inAnHour)}"#
        let keys = await JWTKeyCollection().add(rsa: rsa, digestAlgorithm: .sha256)
        #expect(try await tokens.caller(for: Self.signed(header: #"{"alg":"RS256"}"#, payload: payload, with: keys)).userID == "1")
        #expect(await Self.refusal(try await Self.signed(header: #"{"alg":"RS256","kid":"k"}"#, payload: payload, with: keys), by: tokens) == .unknownKey)
        // PS256 with the same key: not an algorithm this verifier accepts.
        let pss = await JWTKeyCollection().add(pss: rsa, digestAlgorithm: .sha256)
        #expect(await Self.refusal(try await Self.signed(header: #"{"alg":"PS256"}"#, payload: payload, with: pss), by: tokens) == .unsupportedAlgorithm("PS256"))
    }

    @Test func aSecretAndAJWKSTogether() async throws {
        let ec = ES256PrivateKey()
        let tokens = try await JWTAccessTokens(secret: Self.secret, jwks: Self.jwks([try Self.ecJWK(ec.publicKey, kid: "e1")]), issuer: Self.idp, audience: Self.app)
        #expect(tokens.algorithms == ["HS256", "ES256"])
        let payload = #"{"sub":"1","iss":"\#(Self.idp)","aud":"\#(Self.app)","exp":\#(Self.inAnHour)}"#
        #expect(try await tokens.caller(for: Self.signed(header: #"{"alg":"ES256","kid":"e1"}"#, payload: payload, with: JWTKeyCollection().add(ecdsa: ec))).userID == "1")
        // An HS256 token's kid (Supabase sets one) does not matter.
        #expect(try await tokens.caller(for: Self.signed(header: #"{"alg":"HS256","kid":"any"}"#, payload: payload, with: JWTKeyCollection().add(hmac: HMACKey(from: Self.secret), digestAlgorithm: .sha256))).userID == "1")
        #expect(try await tokens.caller(for: tokens.accessToken(for: "2", role: nil)).userID == "2")
    }

    /// A JWKS is an identity provider's, whose keys sign other apps' and tenants' tokens too:
    /// without an audience and an issuer the verifier refuses to be made.
    @Test func aJWKSNeedsAnAudienceAndAnIssuer() async throws {
        typealias ConfigurationError = JWTAccessTokens.ConfigurationError
        let jwks = Self.jwks([try Self.ecJWK(ES256PrivateKey().publicKey, kid: "e1")])
        await #expect(throws: ConfigurationError.jwksWithoutAudience) { try await JWTAccessTokens(jwks: jwks) }
        await #expect(throws: ConfigurationError.jwksWithoutAudience) { try await JWTAccessTokens(jwks: jwks, issuer: Self.idp) }
        await #expect(throws: ConfigurationError.jwksWithoutIssuer) { try await JWTAccessTokens(jwks: jwks, audience: Self.app) }
        await #expect(throws: ConfigurationError.jwksWithoutAudience) { try await JWTAccessTokens(secret: Self.secret, jwks: jwks, issuer: Self.idp, audience: "") }
        _ = try await JWTAccessTokens(jwks: jwks, issuer: Self.idp, audience: Self.app)
    }

    /// An issued token names its account's generation; only an HS256 token's counts (an identity
    /// provider's tokens never name a built-in account).
    @Test func theAccountGenerationIsReadFromTheServersOwnTokens() async throws {
        let ec = ES256PrivateKey()
        let tokens = try await JWTAccessTokens(secret: Self.secret, jwks: Self.jwks([try Self.ecJWK(ec.publicKey, kid: "e1")]), issuer: Self.idp, audience: Self.app)
        #expect(try await tokens.caller(for: tokens.accessToken(for: "4", role: "editor", generation: 3)) == Caller(userID: "4", role: "editor", accountGeneration: 3))
        #expect(try await tokens.caller(for: tokens.accessToken(for: "4", role: nil)).accountGeneration == nil)
        let payload = #"{"sub":"4","iss":"\#(Self.idp)","aud":"\#(Self.app)","modelsync_gen":0,"exp":\#(Self.inAnHour)}"#
        let foreign = try await Self.signed(header: #"{"alg":"ES256","kid":"e1"}"#, payload: payload, with: JWTKeyCollection().add(ecdsa: ec))
        #expect(try await tokens.caller(for: foreign).accountGeneration == nil)
    }

    // MARK: Configuration

    @Test func configurationErrors() async throws {
        typealias ConfigurationError = JWTAccessTokens.ConfigurationError
        await #expect(throws: ConfigurationError.noKeys) { try await JWTAccessTokens() }
        await #expect(throws: ConfigurationError.secretTooShort(byteCount: 31)) { try await JWTAccessTokens(secret: Data(repeating: 7, count: 31)) }
        _ = try await JWTAccessTokens(secret: Data(repeating: 7, count: 32))
        for document in ["", "[]", "{}", #"{"keys":{}}"#, "not json"] {
            await #expect(throws: ConfigurationError.self, "\(document)") { try await JWTAccessTokens(jwks: Data(document.utf8)) }
        }
        await #expect(throws: ConfigurationError.invalidJWKS("no RS256 or ES256 signing key")) {
            try await JWTAccessTokens(jwks: Data(#"{"keys":[{"kty":"oct","k":"c2VjcmV0"}]}"#.utf8))
        }
        // An RSA key too short for jwt-kit (a modulus of 8 bits).
        let tooShort = await #expect(throws: ConfigurationError.self) {
            try await JWTAccessTokens(jwks: Data(#"{"keys":[{"kty":"RSA","kid":"tiny","n":"wQ","e":"AQAB"}]}"#.utf8))
        }
        guard case .invalidKey(kid: "tiny", _) = tooShort else {
            Issue.record("\(String(describing: tooShort))")
            return
        }
        await #expect(throws: ConfigurationError.invalidRoleClaim("")) { try await JWTAccessTokens(secret: Self.secret, roleClaim: "") }
        await #expect(throws: ConfigurationError.invalidRoleClaim("a..b")) { try await JWTAccessTokens(secret: Self.secret, roleClaim: "a..b") }
        await #expect(throws: ConfigurationError.self) { try await JWTAccessTokens(secret: Self.secret, lifetime: .zero) }
        await #expect(throws: ConfigurationError.self) { try await JWTAccessTokens(secret: Self.secret, lifetime: .seconds(Int64.max)) }
        await #expect(throws: ConfigurationError.self) { try await JWTAccessTokens(secret: Self.secret, leeway: .seconds(-1)) }
    }

    @Test func manyVerificationsAtOnce() async throws {
        let tokens = try await JWTAccessTokens(secret: Self.secret)
        let token = try await tokens.accessToken(for: "1", role: "editor")
        let callers = await withTaskGroup(of: Caller?.self) { group in
            for _ in 0..<200 { group.addTask { try? await tokens.caller(for: token) } }
            return await group.reduce(into: [Caller?]()) { $0.append($1) }
        }
        #expect(callers.count == 200 && callers.allSatisfy { $0 == Caller(userID: "1", role: "editor") })
    }
}
