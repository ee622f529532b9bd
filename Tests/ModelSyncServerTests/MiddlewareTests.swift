import Foundation
import HTTPTypes
import Hummingbird
import Metrics
import ModelSyncCore
import ModelSyncJSON
import ModelSyncServer
import Prometheus
import ServerTestSupport
import Testing

/// The server as a Hummingbird router: its own middleware (metrics, the method check, OPTIONS),
/// an app's middleware in `ServerOptions.middleware`, and the test hooks as middleware on a
/// production `SyncServer`.
@Suite struct MiddlewareTests {
    /// The process's one metrics system: swift-metrics is bootstrapped once per process, and no
    /// other test bootstraps it.
    static let registry: PrometheusCollectorRegistry = {
        let registry = PrometheusCollectorRegistry()
        MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: registry))
        return registry
    }()

    @Test func requestMetricsAreServedInPrometheusFormat() async throws {
        let server = try await SyncServer.start(data: sampleData, options: ServerOptions(prometheus: Self.registry))
        let base = server.baseURL.absoluteString
        do {
            _ = try await send(.GET, base + "/posts/1")
            _ = try await send(.GET, base + "/posts/999")
            let metrics = try await send(.GET, base + "/_metrics")
            #expect(metrics.status == 200)
            #expect(metrics.header("Content-Type")?.hasPrefix("text/plain") == true)
            let text = String(decoding: metrics.body, as: UTF8.self)
            // Per route template, method and status, as Hummingbird's MetricsMiddleware counts.
            #expect(text.contains(#"http_route="/{resource}/{id}""#))
            #expect(text.contains(#"http_response_status_code="404""#))
        } catch {
            await server.shutdown()
            throw error
        }
        await server.shutdown()
    }

    @Test func withoutARegistryThereIsNoMetricsRoute() async throws {
        try await withServer { _, base async throws in
            #expect(try await send(.GET, base + "/_metrics").status == 404)
        }
    }

    /// An app's middleware runs on every request, sees the answer, and can refuse one.
    @Test func anAppsMiddlewareRunsOnEveryRequest() async throws {
        let seen = Locked<[Int]>([])
        let middleware = ApiKeyCheck(seen: seen)
        let server = try await SyncServer.start(data: sampleData, options: ServerOptions(middleware: [middleware]))
        let base = server.baseURL.absoluteString
        do {
            #expect(try await send(.GET, base + "/posts").status == 401)
            #expect(try await send(.GET, base + "/posts", headers: [("X-Api-Key", "secret")]).status == 200)
            #expect(try await send(.GET, base + "/nowhere/at/all/here", headers: [("X-Api-Key", "secret")]).status == 404)
            #expect(seen.current == [200, 404])
        } catch {
            await server.shutdown()
            throw error
        }
        await server.shutdown()
    }

    /// The test hooks are middleware: a production server carries them only when given.
    @Test func faultsAndRecordingAreMiddlewareOnAProductionServer() async throws {
        let (faults, recorder) = (FaultInjectionMiddleware(), RequestRecorderMiddleware(limit: 10))
        let server = try await SyncServer.start(data: sampleData, options: ServerOptions(middleware: [recorder, faults]))
        let base = server.baseURL.absoluteString
        do {
            faults.inject(Fault(.status(503, retryAfter: 2)))
            let refused = try await send(.GET, base + "/posts")
            #expect(refused.status == 503)
            #expect(refused.header("Retry-After") == "2")
            #expect(try await send(.GET, base + "/posts").status == 200)
            #expect(recorder.requests.map(\.uri) == ["/posts", "/posts"])
        } catch {
            await server.shutdown()
            throw error
        }
        await server.shutdown()
    }

    /// OPTIONS without an Origin (not a preflight) names the methods of the route; a method
    /// the server never answers is 405 with the methods it does.
    @Test func optionsAndUnknownMethodsNameTheAllowedMethods() async throws {
        try await withServer { _, base async throws in
            let options = try await send(.OPTIONS, base + "/posts/1")
            #expect(options.status == 204)
            #expect(options.header("Allow") == "GET, HEAD, PUT, PATCH, DELETE, OPTIONS")
            let stream = try await send(.OPTIONS, base + "/_changes/stream")
            #expect(stream.header("Allow") == "GET, HEAD, OPTIONS")
            let refused = try await send(.POST, base + "/_changes")
            #expect(refused.status == 405)
            #expect(refused.header("Allow") == "GET, HEAD, OPTIONS")
            #expect(refused.json?["error"] != nil)
        }
    }

    /// HEAD of the stream answers its headers without subscribing, and the refusal a GET meets.
    @Test(arguments: Backend.allCases) func headOfTheStreamAnswersAtOnce(backend: Backend) async throws {
        try await withServer(backend: backend) { _, base async throws in
            let head = try await send(.HEAD, base + "/_changes/stream?since=0")
            #expect(head.status == 200)
            #expect(head.header("Content-Type") == "text/event-stream")
            #expect(try await send(.HEAD, base + "/_changes/stream?since=-1").status == 400)
        }
    }
}

/// An app's middleware: refuses requests without the key, and notes the status of the others.
private struct ApiKeyCheck: RouterMiddleware {
    typealias Context = SyncServerContext
    let seen: Locked<[Int]>
    private static let header = HTTPField.Name("X-Api-Key")

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard let header = Self.header, request.headers[header] == "secret" else { throw HTTPError(.unauthorized) }
        let response = try await next(request, context)
        seen.withLock { $0.append(Int(response.status.code)) }
        return response
    }
}
