import Foundation
import ModelSyncTesting
import Testing

@Suite("Testing: seeded generator and faker")
struct GeneratorTests {
    @Test func seededGeneratorIsSplitMix64() {
        // Reference values of SplitMix64 for seed 0 (Steele, Lea & Flood).
        var random = SeededGenerator(seed: 0)
        #expect(random.next() == 0xE220_A839_7B1D_CDAF)
        #expect(random.next() == 0x6E78_9E6A_A1B9_65F4)
    }

    @Test func theSameSeedGivesTheSameNumbersAndAnotherSeedOthers() {
        var a = SeededGenerator(seed: 42)
        var b = SeededGenerator(seed: 42)
        var c = SeededGenerator(seed: 43)
        let first = (0..<8).map { _ in a.next() }
        #expect(first == (0..<8).map { _ in b.next() })
        #expect(first != (0..<8).map { _ in c.next() })
    }

    @Test func fakerValuesAreReproducibleAndLookReal() {
        var a = Faker(seed: 7)
        var b = Faker(seed: 7)
        let values = [a.name(), a.email(), a.sentence(), a.paragraph(), a.userName(), a.uuid().uuidString]
        #expect(values == [b.name(), b.email(), b.sentence(), b.paragraph(), b.userName(), b.uuid().uuidString])

        var faker = Faker(seed: 1)
        for _ in 0..<50 {
            let email = faker.email()
            #expect(email.wholeMatch(of: /[a-z-]+\.[a-z-]+@example\.(com|org|net)/) != nil, "\(email)")
            let sentence = faker.sentence(words: 5)
            #expect(sentence.split(separator: " ").count == 5)
            #expect(sentence.first?.isUppercase == true && sentence.hasSuffix("."))
            #expect(faker.name().split(separator: " ").count == 2)
            #expect((3...9).contains(faker.int(in: 3...9)))
        }
        #expect(faker.element(of: [Int]()) == nil)
        let uuid = faker.uuid().uuidString
        #expect(Array(uuid)[14] == "4")  // version 4 layout
    }

    @Test func fakeDatesStayInTheirRange() {
        var faker = Faker(seed: 3)
        let start = Date(timeIntervalSince1970: 1_700_000_000)
        let end = start.addingTimeInterval(86_400)
        for _ in 0..<20 {
            let date = faker.date(between: end, and: start)
            #expect(date >= start && date <= end)
        }
        #expect(faker.date(between: start, and: start) == start)
    }
}
