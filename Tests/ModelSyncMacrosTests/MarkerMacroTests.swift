import Testing

@Suite("Field attributes")
struct MarkerMacroTests {
    @Test func markersExpandToNothingOnTheirOwn() {
        // Without `@Model` the attributes are inert; only `@Model` reads them.
        assertExpansion(
            """
            struct Plain {
                @PrimaryKey var id: Int
                @JSON("body") var text: String
                @Transform(.iso8601) var date: Date
                @Ignored var flag = false
            }
            """,
            expandedSource: """
            struct Plain {
                var id: Int
                var text: String
                var date: Date
                var flag = false
            }
            """
        )
    }
}
