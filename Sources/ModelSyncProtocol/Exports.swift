// The protocol's messages are JSON values: `import ModelSyncProtocol` gives the JSON layer too.
@_exported import ModelSyncJSON
