import ModelSyncCore

/// Layouts rebuilt for a call-level key strategy, one per model type (decoding and encoding
/// runs each keep one, so a strategy is applied once per type and run).
struct LayoutCache {
    let strategy: KeyStrategy?
    private var layouts: [ObjectIdentifier: JSONLayout] = [:]

    init(strategy: KeyStrategy?) {
        self.strategy = strategy
    }

    /// `M`'s own layout, or one rebuilt for the strategy.
    mutating func layout<M: JSONModel>(for type: M.Type) -> JSONLayout {
        guard let strategy else { return M.jsonLayout }
        let id = ObjectIdentifier(type)
        if let cached = layouts[id] { return cached }
        let layout = M.jsonLayout.rekeyed(with: strategy)
        layouts[id] = layout
        return layout
    }
}
