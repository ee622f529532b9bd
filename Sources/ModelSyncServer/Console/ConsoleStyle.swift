extension ConsoleText {
    /// The console's style sheet: one column on a phone (375 px), wider tables on a desk.
    static let style = #"""
        :root { color-scheme: light dark; --accent: #2557a7; --bad: #b3261e; --good: #1b6e2d; --line: #8884; font-family: system-ui, sans-serif; }
        body { margin: 0; line-height: 1.4; }
        .skip { position: absolute; left: -999px; }
        .skip:focus { left: 8px; top: 8px; background: Canvas; padding: 4px 8px; z-index: 1; }
        .visually-hidden { position: absolute; width: 1px; height: 1px; overflow: hidden; clip-path: inset(50%); white-space: nowrap; }
        .top { display: flex; flex-wrap: wrap; gap: 8px 16px; align-items: center; padding: 8px 16px; border-bottom: 1px solid var(--line); }
        .top h1 { font-size: 1.25rem; margin: 0; flex: 1 1 auto; }
        .top p { margin: 0; }
        main { padding: 8px 16px 32px; max-width: 1200px; }
        main:focus { outline: none; }
        h2 { font-size: 1.1rem; margin: 16px 0 8px; }
        .notice { margin: 8px 16px; padding: 8px 12px; border-left: 4px solid #c77c02; background: #c77c0218; }
        .status { min-height: 1.4em; margin: 4px 0; }
        .status.bad, .field-error { color: var(--bad); }
        .status.good { color: var(--good); }
        tr.conflict td { color: var(--bad); }
        .hint { color: GrayText; font-size: 0.9rem; }
        .stack { display: flex; flex-direction: column; gap: 4px; max-width: 32rem; margin-bottom: 16px; }
        .row { display: flex; flex-wrap: wrap; gap: 8px; align-items: center; }
        .query { display: flex; flex-wrap: wrap; gap: 8px; align-items: flex-end; margin-bottom: 8px; }
        .query div { display: flex; flex-direction: column; gap: 2px; flex: 1 1 12rem; }
        label { font-weight: 600; font-size: 0.9rem; }
        input, textarea, button, select { font: inherit; padding: 6px 8px; min-height: 44px; box-sizing: border-box; }
        textarea { font-family: ui-monospace, monospace; }
        button { cursor: pointer; border: 1px solid var(--accent); border-radius: 4px; background: Canvas; color: CanvasText; }
        button[aria-pressed="true"], button[type="submit"] { background: var(--accent); color: #fff; }
        button:disabled { opacity: 0.5; cursor: default; }
        :focus-visible { outline: 3px solid var(--accent); outline-offset: 2px; }
        .views { display: flex; flex-wrap: wrap; gap: 8px; margin: 8px 0; }
        .table-wrap { overflow-x: auto; max-width: 100%; }
        table { border-collapse: collapse; min-width: 100%; }
        th, td { border-bottom: 1px solid var(--line); padding: 4px 8px; text-align: left; vertical-align: top; }
        td { max-width: 24rem; overflow-wrap: anywhere; white-space: pre-wrap; }
        td.number { text-align: right; }
        .pager { display: flex; gap: 8px; align-items: center; margin: 8px 0; }
        .field { display: flex; flex-direction: column; gap: 2px; margin-bottom: 8px; }
        .field textarea { min-height: 44px; }
        .add-field { display: flex; flex-wrap: wrap; gap: 8px; align-items: flex-end; border: 1px solid var(--line); }
        .events { list-style: none; padding: 0; margin: 0; }
        .events li { border-bottom: 1px solid var(--line); padding: 6px 0; }
        .events .meta { font-weight: 600; }
        .events pre { margin: 2px 0 0; white-space: pre-wrap; overflow-wrap: anywhere; font-size: 0.85rem; }
        .charts { display: grid; grid-template-columns: repeat(auto-fit, minmax(16rem, 1fr)); gap: 12px; }
        .charts figure { margin: 0; border: 1px solid var(--line); padding: 8px; }
        .chart { width: 100%; height: 60px; display: block; }
        .chart polyline { fill: none; stroke: var(--accent); stroke-width: 2; }
        .chart circle { fill: var(--accent); }
        .now { margin: 4px 0 0; font-variant-numeric: tabular-nums; }
        @media (max-width: 600px) {
          .top, main { padding-left: 8px; padding-right: 8px; }
          .query div { flex-basis: 100%; }
          th, td { padding: 4px; }
        }
        """#
}
