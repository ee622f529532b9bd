import ModelSyncCore

/// Layouts rebuilt for a call-level key strategy, one per model type (decoding and encoding
/// runs each keep one, so a strategy is applied once per type and run).
struct LayoutCache {
    let strategy: KeyStrategy?
    /// Whether the run uses the storage format, whose keys are the property names.
    let isStorage: Bool
    private var layouts: [ObjectIdentifier: JSONLayout] = [:]

    init(strategy: KeyStrategy?, profile: JSONCodingProfile) {
        self.strategy = strategy
        self.isStorage = profile == .storage
    }

    /// `M`'s own layout, its storage layout, or one rebuilt for the strategy.
    mutating func layout<M: JSONModel>(for type: M.Type) -> JSONLayout {
        if isStorage { return M.jsonLayout.storageLayout }
        guard let strategy else { return M.jsonLayout }
        let id = ObjectIdentifier(type)
        if let cached = layouts[id] { return cached }
        let layout = M.jsonLayout.rekeyed(with: strategy)
        layouts[id] = layout
        return layout
    }
}
