import ModelSyncProtocol

// A server of its own answers the change feed with the protocol's types: no server, no HTTP
// client and no SQLite in this build.
let page = SyncFeedPage(
    changes: [SyncChange(sequence: 2, collection: "posts", id: 1, record: ["id": 1, "title": "Hello"], createdWith: "key-1")],
    next: "2", more: false)
let read = try SyncFeedPage(json: try JSONValue(parsing: page.json.jsonBytes()))
precondition(read == page && read.changes[0].etag == #""2""#, "the feed page changed on its way through JSON")
print("ProtocolConsumer: a feed page of \(read.changes.count) change round-tripped")
