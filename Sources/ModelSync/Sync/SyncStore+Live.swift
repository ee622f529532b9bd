import Foundation
import Logging
import ModelSyncCore
import ModelSyncJSON
import ModelSyncProtocol
import ModelSyncRemote
import ModelSyncSQLite

extension SyncStore {
    /// Keeps `models` and the subscriptions (``subscribe(_:where:ttl:)``) current while it runs:
    /// listens to the server's change stream (`GET /_changes/stream`, Server-Sent Events) and
    /// pulls a model, and the subscriptions of its collection, as soon as a change of that
    /// collection arrives. Changes arriving during a pull are collected into the next one. A
    /// subscription made later to another collection reconnects the stream to follow it too.
    /// Reconnects after a dropped connection with ``backoff``, resuming after the last event
    /// seen. Calling it again replaces the running subscription; it runs (and keeps the store)
    /// until ``stopLivePull()``.
    ///
    /// Needs a server with a change stream (`modelsync-server`); against others, call
    /// ``pull(_:)-(M.Type)`` when the app wants fresh data.
    public func startLivePull(_ models: [any SyncedModel.Type]) {
        for model in models { registerAny(model) }
        let collections = Dictionary(models.map { (Self.collection(of: $0), $0) }, uniquingKeysWith: { first, _ in first })
        let task = Task { [weak self] in
            guard let self else { return }
            let subscribed = await self.subscribedCollections()
            self.state.withLock { $0.liveCollections = Set(collections.keys).union(subscribed) }
            await self.listen(collections, following: Set(collections.keys).union(subscribed))
        }
        state.withLock { state in
            state.livePull?.cancel()
            state.livePull = task
            state.liveModels = models
        }
    }

    /// Has a running live pull follow `type`'s collection, for a subscription of it.
    func followInLivePull<M: SyncedModel>(_ type: M.Type) {
        let restart: [any SyncedModel.Type]? = state.withLock { state in
            guard state.livePull != nil, !state.liveCollections.isEmpty, !state.liveCollections.contains(Self.collection(of: M.self)) else { return nil }
            return state.liveModels
        }
        if let restart { startLivePull(restart) }
    }

    /// The collections of the subscriptions whose models the store knows.
    private func subscribedCollections() async -> Set<String> {
        guard let subscriptions = try? await subscriptions() else { return [] }
        return Set(subscriptions.compactMap { subscription in
            state.withLock { $0.models[subscription.model] }.map { Self.collection(of: $0) }
        })
    }

    /// Stops the subscription started by ``startLivePull(_:)``.
    public func stopLivePull() {
        state.withLock { state in
            state.livePull?.cancel()
            state.livePull = nil
            state.liveModels = []
            state.liveCollections = []
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

    private func listen(_ collections: [String: any SyncedModel.Type], following: Set<String>) async {
        let dirty = Locked(following)
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
                        do {
                            if let type = collections[name] { try await self.pullAny(type) }
                            try await self.pullSubscriptions(ofCollection: name)
                        } catch {
                            self.logger.info("live pull failed; it is tried again with the next change", metadata: ["collection": "\(name)", "error": "\(error)"])
                            dirty.withLock { _ = $0.insert(name) }
                        }
                    }
                }
            }
            group.addTask {
                await self.readChangeStream(collections: Array(following)) { collection in
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
