// ``LikePattern``'s program and the Pike VM that runs it.

extension LikePattern {
    struct Compiler {
        var program: [Instruction] = []
        var sets: [ScalarSet] = []

        mutating func emit(_ node: Node) {
            switch node {
            case .empty: break
            case .scalar(let value): program.append(.scalar(CaseFolding.lower(value)))
            case .any: program.append(.any)
            case .set(let set):
                sets.append(set)
                program.append(.set(sets.count - 1))
            case .start: program.append(.assertStart)
            case .end: program.append(.assertEnd)
            case .sequence(let nodes): for node in nodes { emit(node) }
            case .alternatives(let branches):
                // split L1, next; L1: branch; jump end; next: split … ; the last branch alone.
                var jumps: [Int] = []
                for (index, branch) in branches.enumerated() {
                    if index == branches.count - 1 {
                        emit(branch)
                        break
                    }
                    let split = program.count
                    program.append(.split(split + 1, 0))
                    emit(branch)
                    jumps.append(program.count)
                    program.append(.jump(0))
                    program[split] = .split(split + 1, program.count)
                }
                for jump in jumps { program[jump] = .jump(program.count) }
            case .repetition(let operand, let minimum, let maximum):
                for _ in 0..<minimum { emit(operand) }
                if let maximum {
                    // Each optional copy: split into it or past every remaining one.
                    var splits: [Int] = []
                    for _ in minimum..<maximum {
                        splits.append(program.count)
                        program.append(.split(program.count + 1, 0))
                        emit(operand)
                    }
                    for split in splits { program[split] = .split(split + 1, program.count) }
                } else {
                    // loop: split body, exit; body; jump loop
                    let loop = program.count
                    program.append(.split(loop + 1, 0))
                    emit(operand)
                    program.append(.jump(loop))
                    program[loop] = .split(loop + 1, program.count)
                }
            }
        }
    }
}

// MARK: Matching

extension LikePattern {
    /// Whether the pattern matches anywhere in `text`, ignoring case.
    ///
    /// A Pike VM: the threads at each position are a set of program counters (each at most
    /// once), so a step costs at most the program's size, and the match the text's length times it.
    package func matches(_ text: String) -> Bool {
        var current = ThreadSet(capacity: program.count)
        var next = ThreadSet(capacity: program.count)
        var stack: [Int] = []
        let scalars = text.unicodeScalars
        let count = scalars.count
        var index = scalars.startIndex
        var position = 0
        while true {
            // A match may start at every position.
            if add(0, to: &current, at: position, count: count, &stack) { return true }
            guard position < count else { return false }
            let original = scalars[index].value
            let folded = CaseFolding.lower(original)
            next.removeAll()
            for pc in current.members {
                let advances: Bool = switch program[pc] {
                case .scalar(let value): value == folded
                case .any: original != 0x0A
                case .set(let set): sets[set].matches(original)
                default: false
                }
                if advances, add(pc + 1, to: &next, at: position + 1, count: count, &stack) { return true }
            }
            swap(&current, &next)
            index = scalars.index(after: index)
            position += 1
        }
    }

    /// Adds the thread at `pc` and every thread it reaches without reading a character; true
    /// when one of them matches.
    private func add(_ pc: Int, to threads: inout ThreadSet, at position: Int, count: Int, _ stack: inout [Int]) -> Bool {
        stack.append(pc)
        while let pc = stack.popLast() {
            guard threads.insert(pc) else { continue }
            switch program[pc] {
            case .match:
                stack.removeAll(keepingCapacity: true)
                return true
            case .jump(let target): stack.append(target)
            case .split(let first, let second):
                stack.append(second)
                stack.append(first)
            case .assertStart: if position == 0 { stack.append(pc + 1) }
            case .assertEnd: if position == count { stack.append(pc + 1) }
            case .scalar, .any, .set: break
            }
        }
        return false
    }

    /// A set of program counters with constant-time insertion, membership and clearing (a
    /// sparse set), in insertion order.
    struct ThreadSet {
        private(set) var members: [Int] = []
        private var slots: [Int]

        init(capacity: Int) {
            slots = Array(repeating: 0, count: capacity)
            members.reserveCapacity(capacity)
        }

        /// Inserts `pc`; false when it was there.
        mutating func insert(_ pc: Int) -> Bool {
            let slot = slots[pc]
            if slot < members.count && members[slot] == pc { return false }
            slots[pc] = members.count
            members.append(pc)
            return true
        }

        mutating func removeAll() { members.removeAll(keepingCapacity: true) }
    }
}

/// Simple (one-scalar) case mappings, for matching that ignores case.
enum CaseFolding {
    static func lower(_ value: UInt32) -> UInt32 {
        if value < 0x80 { return (0x41...0x5A).contains(value) ? value + 0x20 : value }
        guard let scalar = Unicode.Scalar(value) else { return value }
        let mapped = scalar.properties.lowercaseMapping.unicodeScalars
        return mapped.count == 1 ? mapped.first?.value ?? value : value
    }

    static func upper(_ value: UInt32) -> UInt32 {
        if value < 0x80 { return (0x61...0x7A).contains(value) ? value - 0x20 : value }
        guard let scalar = Unicode.Scalar(value) else { return value }
        let mapped = scalar.properties.uppercaseMapping.unicodeScalars
        return mapped.count == 1 ? mapped.first?.value ?? value : value
    }
}
