import Foundation
import ModelSyncCore
import ModelSyncJSON
import Testing

@Model
struct Signup: Equatable {
    var id: Int?
    var name: String
    @JSON("mail") var email: String
    var nickname: String?
    var website: String?
    var age: Int
    var tags: [String] = []
    var plan: String = "free"
    var code: String = "ABC-12"
    var password: String = ""
    var passwordConfirmation: String = ""
}

extension Signup: Validatable {
    static let validator = Validator<Signup> {
        Validate(\.name, .required("Enter your name"), .length(2...40), .custom("No shouting") { $0.contains(where: \.isLowercase) || $0 == $0.lowercased() })
        Validate(\.email, .required(), .email())
        Validate(\.nickname, .length(3...))
        Validate(\.website, .url())
        Validate(\.age, .range(13...))
        Validate(\.tags, .length(...3, "At most three tags"))
        Validate(\.plan, .oneOf(["free", "pro"]))
        Validate(\.code, .pattern("[A-Z]{3}-[0-9]{2}", "Three capitals, a dash, two digits"))
        Validate("The passwords differ", fields: \.password, \.passwordConfirmation) {
            $0.password == $0.passwordConfirmation
        }
    }
}

/// Another type with a property of the same name and rules of its own.
@Model
struct Team {
    var name: String
}

extension Team: Validatable {
    static let validator = Validator<Team> {
        Validate(\.name, .length(...3, "Three letters at most"))
    }
}

/// A model without rules.
@Model
struct Tag {
    var name: String
}

@Suite struct ValidationTests {
    let valid = Signup(name: "Ada", email: "ada@example.com", age: 36)

    @Test func aValidModelHasNoFailures() throws {
        #expect(valid.validationFailures.isEmpty)
        #expect(try valid.validated() == valid)
    }

    @Test func everyFailureIsListedWithItsField() {
        var signup = valid
        signup.name = ""
        signup.email = "not an email"
        signup.age = 12
        let error = #expect(throws: ValidationError.self) { try signup.validated() }
        #expect(error?.model == "Signup")
        #expect(error?.fields == ["name", "email", "age"])
        #expect(error?["name"] == ["Enter your name", "length must be between 2 and 40"])
        #expect(error?[\Signup.email] == ["must be an email address"])
        #expect(error?["age"] == ["must be at least 13"])
        #expect(error?["plan"] == [])
        #expect(error?.failures.first { $0.fields == ["email"] }?.jsonKeys == ["mail"])
        #expect(error?.messagesByField["age"] == ["must be at least 13"])
        #expect(error?.description == "Signup is invalid: name: Enter your name; name: length must be between 2 and 40; email: must be an email address; age: must be at least 13")
    }

    @Test func requiredAndNonEmpty() {
        let required = Check<String>.required()
        #expect(!required.passes(""))
        #expect(!required.passes("  \n"))
        #expect(required.passes("x"))
        #expect(!Check<[Int]>.required().passes([]))
        #expect(Check<[Int]>.required().passes([1]))
        #expect(!Check<String?>.required().passes(nil))
        #expect(!Check<String?>.required().passes(" "))
        #expect(Check<String?>.required().passes("x"))
        #expect(!Check<Int?>.required().passes(nil))
        #expect(Check<Int?>.required().passes(0))
        #expect(Check<String>.nonEmpty().passes(" "))
        #expect(!Check<String>.nonEmpty().passes(""))
        #expect(!Check<[String: Int]?>.nonEmpty().passes([:]))
        #expect(!Check<String?>.nonEmpty().passes(nil))
    }

    @Test func lengthRangeOneOfAndCustom() {
        #expect(Check<String>.length(2...3).passes("ab"))
        #expect(!Check<String>.length(2...3).passes("abcd"))
        #expect(!Check<[Int]>.length(1...).passes([]))
        #expect(Check<String?>.length(2...).passes(nil))
        #expect(!Check<String?>.length(2...).passes("a"))
        #expect(Check<Double>.range(0...5).passes(5))
        #expect(!Check<Double>.range(0..<5).passes(5))
        #expect(Check<Int>.range(..<5).message == "must be less than 5")
        #expect(!Check<Int?>.range(...5).passes(6))
        #expect(Check<Int?>.range(...5).passes(nil))
        #expect(Check<String>.oneOf(["a", "b"]).passes("b"))
        #expect(!Check<String>.oneOf(["a", "b"]).passes("c"))
        #expect(Check<String>.oneOf(["a", "b"]).message == "must be one of a, b")
        #expect(Check<Int>.custom("even") { $0.isMultiple(of: 2) }.passes(4))
    }

    @Test func patternsEmailsAndURLs() {
        let code = Check<String>.pattern("[A-Z]{3}-[0-9]{2}")
        #expect(code.passes("ABC-12"))
        #expect(!code.passes("xABC-12"), "the whole value must match")
        #expect(!code.passes("ABC-123"))
        #expect(Check<String>.pattern("a|ab").passes("ab"))
        let broken = Check<String>.pattern("(")
        #expect(!broken.passes("("))
        #expect(broken.message == "invalid pattern (")
        for address in ["ada@example.com", "a.b+c@mail.example.org"] {
            #expect(Check<String>.email().passes(address), "\(address)")
        }
        for address in ["ada", "ada@example", "a da@example.com", "@example.com", "ada@@example.com"] {
            #expect(!Check<String>.email().passes(address), "\(address)")
        }
        #expect(Check<String?>.email().passes(nil))
        #expect(Check<String>.url().passes("https://example.com/a?b=1"))
        #expect(!Check<String>.url().passes("example.com"))
        #expect(!Check<String>.url().passes("ftp://example.com"))
        #expect(Check<String>.url(schemes: ["ftp"]).passes("ftp://example.com"))
        #expect(!Check<Substring>.url().passes("not a url"))
    }

    @Test func fieldRulesOnOptionalsPassNil() throws {
        var signup = valid
        signup.nickname = nil
        signup.website = nil
        #expect(signup.validationFailures.isEmpty)
        signup.nickname = "Al"
        signup.website = "nowhere"
        #expect(signup.validationFailures.map(\.fields) == [["nickname"], ["website"]])
    }

    @Test func everyKindOfRuleFailsAtOnce() {
        var signup = valid
        signup.name = "ADA"
        signup.email = ""
        signup.nickname = "A"
        signup.website = "mailto:ada"
        signup.age = 3
        signup.tags = ["a", "b", "c", "d"]
        signup.plan = "gold"
        signup.code = "abc"
        signup.password = "secret"
        let failures = signup.validationFailures
        #expect(failures.map(\.description) == [
            "name: No shouting",
            "email: is required",
            "email: must be an email address",
            "nickname: length must be at least 3",
            "website: must be a URL",
            "age: must be at least 13",
            "tags: At most three tags",
            "plan: must be one of free, pro",
            "code: Three capitals, a dash, two digits",
            "password, passwordConfirmation: The passwords differ",
        ])
    }

    @Test func wholeModelRulesNameTheirFields() throws {
        var signup = valid
        signup.password = "one"
        signup.passwordConfirmation = "two"
        let error = #expect(throws: ValidationError.self) { try signup.validated() }
        #expect(error?.failures.count == 1)
        #expect(error?["password"] == ["The passwords differ"])
        #expect(error?[\Signup.passwordConfirmation] == ["The passwords differ"])
        #expect(error?.fields == ["password", "passwordConfirmation"])
        signup.passwordConfirmation = "one"
        #expect(try signup.validated() == signup)
    }

    @Test func validatorsBelongToTheirType() throws {
        // "Ada" breaks Team's rule and satisfies Signup's: each type runs its own rules only.
        #expect(Team(name: "Ada").validationFailures.isEmpty)
        #expect(Team(name: "Adele").validationFailures.map(\.message) == ["Three letters at most"])
        var signup = valid
        signup.name = "Adele"
        #expect(signup.validationFailures.isEmpty)
        #expect(Signup.validator.rules.count == 9)
        #expect(Team.validator.rules.count == 1)
    }

    @Test func propertiesOutsideTheSchemaAreNamedByTheirKeyPath() {
        let validator = Validator<Memo> { Validate(\.isSelected, .custom("Select it") { $0 }) }
        #expect(validator.failures(of: Memo(title: "A")).map(\.fields) == [["isSelected"]])
    }

    @Test func modelsWithoutRulesAreValid() throws {
        let tag = Tag(name: "")
        #expect(tag.validationFailures.isEmpty)
        #expect(try tag.validated().name == "")
    }

    @Test func validatorsComposeWithConditionsAndLoops() throws {
        let strict = true
        let validator = Validator<Signup> {
            if strict {
                Validate(\.name, .length(...2))
            }
            for limit in [3, 4] {
                Validate(\.age, .range(...limit))
            }
        }
        #expect(validator.failures(of: valid).map(\.description) == [
            "name: length must be at most 2", "age: must be at most 3", "age: must be at most 4",
        ])
        #expect(throws: ValidationError.self) { try validator.validate(valid) }
    }
}
