import Hummingbird
import ModelSyncJSON
import ModelSyncProtocol

// The built-in accounts' routes; what they do is in Access/ (AccountService).
extension ServerRoutes {
    /// `POST /register` (`/signup`) and `POST /login` (`/signin`), json-server-auth's routes.
    func accountRoutes(_ accounts: BuiltInAccounts, rules: AccessRules) -> [Route] {
        let service = AccountService(store: self.accounts, accounts: accounts, collection: rules.accountsCollection)
        let register: Handler = { request, context in try await service.register(try await readBody(request), from: context.clientAddress) }
        let login: Handler = { request, context in try await service.login(try await readBody(request), from: context.clientAddress) }
        return [
            Route(path: "/" + SyncProtocol.Path.register, handlers: [.post: register]), Route(path: "/" + SyncProtocol.Path.signup, handlers: [.post: register]),
            Route(path: "/" + SyncProtocol.Path.login, handlers: [.post: login]), Route(path: "/" + SyncProtocol.Path.signin, handlers: [.post: login]),
        ] + sessionRoutes(service)
    }

    /// `POST /token` and `POST /logout` (with refresh tokens), `PUT` and `GET /_accounts/<id>/role`,
    /// `POST` (the user) and `PUT /_accounts/<id>/password` (an admin), and `POST /_accounts/<id>/logout`.
    func sessionRoutes(_ service: AccountService) -> [Route] {
        var routes = [
            Route(path: "/\(SyncProtocol.Path.accounts)/:id/role", handlers: [.put: { request, context in
                try await service.setRole(userID: try context.segment("id"), try await readBody(request), caller: context.caller)
            }, .get: { _, context in try await service.role(userID: try context.segment("id"), caller: context.caller) }]),
            Route(path: "/\(SyncProtocol.Path.accounts)/:id/password", handlers: [.post: { request, context in
                try await service.changePassword(
                    userID: try context.segment("id"), try await readBody(request), caller: context.caller, from: context.clientAddress)
            }, .put: { request, context in
                try await service.resetPassword(userID: try context.segment("id"), try await readBody(request), caller: context.caller)
            }]),
            Route(path: "/\(SyncProtocol.Path.accounts)/:id/logout", handlers: [.post: { _, context in
                try await service.logOutEverywhere(userID: try context.segment("id"), caller: context.caller)
            }]),
        ]
        if service.accounts.refreshTokens != nil {
            routes += [
                Route(path: "/" + SyncProtocol.Path.token, handlers: [.post: { request, context in
                    try service.limit(address: context.clientAddress)
                    return try await service.refresh(try await readBody(request), caller: context.caller)
                }]),
                Route(path: "/" + SyncProtocol.Path.logout, handlers: [.post: { request, context in try await service.logOut(try await readBody(request), caller: context.caller) }]),
            ]
        }
        return routes
    }
}
