import Foundation
import Logging
import ModelSyncCore
import ModelSyncJSON
import ModelSyncProtocol
import ModelSyncRemote
import ModelSyncSQLite

extension SyncStore {
    /// Keeps `models` current while it runs: listens to the server's change stream
    /// (`GET /_changes/stream`, Server-Sent Events) and pulls a model as soon as a change of its
    /// collection arrives. Changes arriving during a pull are collected into the next one.
    /// Reconnects after a dropped connection with ``backoff``, resuming after the last event
    /// seen. Calling it again replaces the running subscription; it runs (and keeps the store)
    /// until ``stopLivePull()``.
    ///
    /// Needs a server with a change stream (`modelsync-server`); against others, call
    /// ``pull(_:)`` when the app wants fresh data.
    public func startLivePull(_ models: [any SyncedModel.Type]) {
        for model in models { registerAny(model) }
        let collections = Dictionary(models.map { (Self.collection(of: $0), $0) }, uniquingKeysWith: { first, _ in first })
        let task = Task { [weak self] in
            guard let self else { return }
            await self.listen(collections)
        }
        state.withLock { state in
            state.livePull?.cancel()
            state.livePull = task
        }
    }

    /// Stops the subscription started by ``startLivePull(_:)``.
    public func stopLivePull() {
        state.withLock { state in
            state.livePull?.cancel()
            state.livePull = nil
        }
    }

    static func collection(of type: any SyncedModel.Type) -> String {
        func open<M: SyncedModel>(_ type: M.Type) -> String {
            M.remote.path.split(separator: "/").last.map(String.init) ?? M.remote.path
        }
        return open(type)
    }

    private func registerAny(_ type: any SyncedModel.Type) {
        func open<M: SyncedModel>(_ type: M.Type) { register(M.self) }
        open(type)
    }

    private func pullAny(_ type: any SyncedModel.Type) async throws {
        func open<M: SyncedModel>(_ type: M.Type) async throws { try await pull(M.self) }
        try await open(type)
    }

    private func listen(_ collections: [String: any SyncedModel.Type]) async {
        let dirty = Locked(Set<String>(collections.keys))
        let (wakeUps, wake) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        // A first pull of everything, then one per batch of changes.
        wake.yield()
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                for await _ in wakeUps {
                    let names = dirty.withLock { names in
                        defer { names.removeAll() }
                        return names
                    }
                    for name in names.sorted() {
                        guard let type = collections[name] else { continue }
                        do {
                            try await self.pullAny(type)
                        } catch {
                            self.logger.info("live pull failed; it is tried again with the next change", metadata: ["collection": "\(name)", "error": "\(error)"])
                            dirty.withLock { _ = $0.insert(name) }
                        }
                    }
                }
            }
            group.addTask {
                await self.readChangeStream(collections: Array(collections.keys)) { collection in
                    dirty.withLock { _ = $0.insert(collection) }
                    wake.yield()
                }
                wake.finish()
            }
            await group.waitForAll()
        }
    }

    /// Reads the change stream until cancelled, reconnecting with backoff.
    private func readChangeStream(collections: [String], changed: @escaping @Sendable (String) -> Void) async {
        var lastEventID: String?
        var delay = backoff.initial
        while !Task.isCancelled {
            var url = remote.baseURL.appendingPathComponent(SyncProtocol.Path.changeStream)
            url.append(queryItems: [URLQueryItem(name: "collections", value: collections.sorted().joined(separator: ","))]
                + (lastEventID == nil ? [URLQueryItem(name: "since", value: "now")] : []))
            // From now (the first connection, or after a 410): every collection is pulled once
            // the stream is open, so that a change committed before it subscribed, which its
            // backlog does not hold, is pulled too. A reconnection with the last event's id gets
            // what it missed as its backlog.
            let fromNow = lastEventID == nil
            let opened: @Sendable () -> Void = { for collection in collections { changed(collection) } }
            do {
                for try await event in remote.events(at: url, lastEventID: lastEventID, opened: fromNow ? opened : nil) {
                    delay = backoff.initial
                    if let id = event.id { lastEventID = id }
                    guard let change = try? JSONValue(parsing: Array(event.data.utf8)), let collection = change["collection"]?.stringValue else { continue }
                    changed(collection)
                }
            } catch let error as RemoteError where error.status == 410 {
                // The stream's cursor is too old, or past the server's data (replaced since): the
                // stream starts over from now, and the pulls, once it is open, read everything
                // again (each meets the 410 itself).
                logger.info("the change stream's cursor is gone; pulling everything", metadata: ["error": "\(error)"])
                lastEventID = nil
            } catch {
                if Task.isCancelled { return }
                logger.debug("the change stream ended; reconnecting", metadata: ["error": "\(error)"])
            }
            try? await Task.sleep(for: delay)
            delay = min(delay * 2, backoff.maximum)
        }
    }
}
