import ModelSyncCore

/// The state of one encoding run: the writer, the options and the date strategy in force.
/// Custom ``JSONEncodable`` types receive it `inout` and write through ``writer``.
public struct JSONEncodingContext {
    /// Where the output goes.
    public var writer: JSONWriter
    /// The options of this run.
    public let options: JSONEncodingOptions
    /// The date strategy in force: the model's own, or else the options'.
    var dateStrategy: JSONDateStrategy
    /// Layouts rebuilt for ``JSONEncodingOptions/keyStrategy``.
    var layouts: LayoutCache

    init(options: JSONEncodingOptions, capacity: Int = 4096) {
        self.writer = JSONWriter(capacity: capacity)
        self.options = options
        self.dateStrategy = options.dateStrategy
        self.layouts = LayoutCache(strategy: options.keyStrategy, profile: options.profile)
    }

    /// Whether the run writes the storage format.
    var isStorage: Bool { layouts.isStorage }

    /// A context that writes into a buffer of its own with the same settings (for nested keys
    /// and hooks, whose output is assembled afterwards).
    func detached() -> JSONEncodingContext {
        var context = JSONEncodingContext(options: options, capacity: 256)
        context.dateStrategy = dateStrategy
        context.layouts = layouts
        return context
    }

    /// The layout to use for `M`: its own, or one rebuilt for the key-strategy option.
    mutating func layout<M: JSONModel>(for type: M.Type) -> JSONLayout {
        layouts.layout(for: type)
    }
}
