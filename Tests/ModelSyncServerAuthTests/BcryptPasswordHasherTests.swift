import ModelSyncServer
import ModelSyncServerAuth
import NIOPosix
import Testing

/// bcrypt through the `PasswordHasher` protocol, at the lowest cost accepted to keep the suite fast.
@Suite struct BcryptPasswordHasherTests {
    static func hasher() throws -> BcryptPasswordHasher { try BcryptPasswordHasher(cost: BcryptPasswordHasher.minimumCost) }

    @Test func aHashVerifiesItsPasswordAndNoOther() async throws {
        let hasher: any PasswordHasher = try Self.hasher()
        let hash = try await hasher.hash("correct horse battery staple")
        #expect(hash.hasPrefix("$2b$10$") && hash.utf8.count == 60)
        #expect(try await hasher.verify("correct horse battery staple", against: hash))
        #expect(try await !hasher.verify("correct horse battery stapl", against: hash))
        #expect(try await !hasher.verify("Correct horse battery staple", against: hash))
        #expect(try await !hasher.verify("", against: hash))
        // Salted: the same password hashes differently each time, and each verifies.
        let again = try await hasher.hash("correct horse battery staple")
        #expect(again != hash)
        #expect(try await hasher.verify("correct horse battery staple", against: again))
        // Unicode passwords, and the empty one (whether it is allowed is the route's decision).
        let unicode = try await hasher.hash("pässwörd 🔑")
        #expect(try await hasher.verify("pässwörd 🔑", against: unicode))
        #expect(try await !hasher.verify("passwort 🔑", against: unicode))
        #expect(try await hasher.verify("", against: hasher.hash("")))
    }

    @Test func theCostIsConfigurableFromTenUp() throws {
        #expect(try BcryptPasswordHasher().cost == 12)
        #expect(try BcryptPasswordHasher(cost: 10).cost == 10)
        #expect(throws: PasswordHashingError.costOutOfRange(9)) { try BcryptPasswordHasher(cost: 9) }
        #expect(throws: PasswordHashingError.costOutOfRange(4)) { try BcryptPasswordHasher(cost: 4) }
        #expect(throws: PasswordHashingError.costOutOfRange(32)) { try BcryptPasswordHasher(cost: 32) }
        #expect(throws: PasswordHashingError.costOutOfRange(-1)) { try BcryptPasswordHasher(cost: -1) }
    }

    @Test func theCostIsInTheHash() async throws {
        let hash = try await BcryptPasswordHasher(cost: 11).hash("p")
        #expect(hash.hasPrefix("$2b$11$"))
        // A hasher of another cost still verifies it: raising the cost keeps old accounts.
        #expect(try await Self.hasher().verify("p", against: hash))
    }

    /// Malformed and foreign hashes are false, never an error.
    @Test func aHashItDidNotMakeIsFalse() async throws {
        let hasher = try Self.hasher()
        let valid = try await hasher.hash("secret")
        let afterVersion = String(valid.dropFirst(3)), afterCost = String(valid.dropFirst(6)), withoutLast = String(valid.dropLast())
        let malformed: [String] = [
            "", "secret", "not a hash", "$2b$", "$2b$10$", withoutLast, valid + "x",
            "$2b$99" + afterCost, "$2b$03" + afterCost, "$2b$1a" + afterCost, "$2c" + afterVersion, "$3b" + afterVersion,
            "$2b$10!" + String(valid.dropFirst(7)), withoutLast + "!", withoutLast + "\0", withoutLast + "é",
            "$argon2id$v=19$m=65536,t=3,p=4$c29tZXNhbHQ$RdescudvJCsgt3ub+b+dWRWJTmaaJObG",
            "pbkdf2_sha256$260000$salt$hash", "{SHA}qUqP5cyxm6YcTAhz05Hph5gvu9M=",
            String(repeating: "$", count: 60), String(repeating: "a", count: 100_000),
        ]
        for hash in malformed {
            #expect(try await !hasher.verify("secret", against: hash), "\(hash.prefix(80))")
        }
    }

    /// json-server-auth (bcryptjs) writes `$2a$`, PHP `$2y$`: both verify.
    @Test func hashesOfOtherBcryptsVerify() async throws {
        let hasher = try Self.hasher()
        // A published test vector (OpenBSD's and crypt_blowfish's), cost 5.
        #expect(try await hasher.verify("U*U", against: "$2a$05$CCCCCCCCCCCCCCCCCCCCC.E5YPO9kmyuRGyh0XouQYb4YMJKvyOeW"))
        #expect(try await !hasher.verify("U*U*", against: "$2a$05$CCCCCCCCCCCCCCCCCCCCC.E5YPO9kmyuRGyh0XouQYb4YMJKvyOeW"))
        let hash = try await hasher.hash("secret")
        #expect(try await hasher.verify("secret", against: "$2y" + hash.dropFirst(3)))
        #expect(try await !hasher.verify("secrets", against: "$2y" + hash.dropFirst(3)))
    }

    /// bcrypt reads 72 bytes: a longer password is refused, not cut, so that no two passwords
    /// share a hash.
    @Test func passwordsOverSeventyTwoBytesAreRefused() async throws {
        let hasher = try Self.hasher()
        let seventyTwo = String(repeating: "a", count: 72)
        let hash = try await hasher.hash(seventyTwo)
        #expect(try await hasher.verify(seventyTwo, against: hash))
        #expect(try await !hasher.verify(seventyTwo + "b", against: hash))
        #expect(try await !hasher.verify(String(repeating: "a", count: 71), against: hash))

        await #expect(throws: PasswordHashingError.passwordTooLong(byteCount: 73)) { try await hasher.hash(seventyTwo + "b") }
        await #expect(throws: PasswordHashingError.passwordTooLong(byteCount: 1000)) { try await hasher.hash(String(repeating: "x", count: 1000)) }
        // Bytes, not characters: 24 euro signs are 72 bytes, 25 are 75.
        #expect(try await hasher.verify(String(repeating: "€", count: 24), against: hasher.hash(String(repeating: "€", count: 24))))
        await #expect(throws: PasswordHashingError.passwordTooLong(byteCount: 75)) { try await hasher.hash(String(repeating: "€", count: 25)) }
        // Where bcrypt would stop reading: a NUL.
        await #expect(throws: PasswordHashingError.passwordContainsNUL) { try await hasher.hash("abc\0def") }
        let abc = try await hasher.hash("abc")
        #expect(try await !hasher.verify("abc\0def", against: abc))
    }

    /// bcrypt runs on the pool it is given: once that pool is shut down, hashing fails rather
    /// than falling back to the caller's thread.
    @Test func bcryptRunsOnTheThreadPool() async throws {
        let pool = NIOThreadPool(numberOfThreads: 1)
        pool.start()
        let hasher = try BcryptPasswordHasher(cost: 10, threadPool: pool)
        let hash = try await hasher.hash("p")
        #expect(try await hasher.verify("p", against: hash))
        try await pool.shutdownGracefully()
        await #expect(throws: (any Error).self) { try await hasher.hash("p") }
        await #expect(throws: (any Error).self) { try await hasher.verify("p", against: hash) }
        // A malformed hash is false before the pool is asked.
        #expect(try await !hasher.verify("p", against: "nope"))
    }

    @Test func hashesInParallel() async throws {
        let hasher = try Self.hasher()
        let results = try await withThrowingTaskGroup(of: Bool.self) { group in
            for index in 0..<4 {
                group.addTask { try await hasher.verify("p\(index)", against: hasher.hash("p\(index)")) }
            }
            return try await group.reduce(into: [Bool]()) { $0.append($1) }
        }
        #expect(results == [true, true, true, true])
    }
}
