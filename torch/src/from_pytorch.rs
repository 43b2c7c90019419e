// The book page `docs/src/from-pytorch.md` as this module's documentation, so that
// `cargo test -p torch --doc` runs every block on it; the test below checks that each Rust cell
// of its tables is one of the lines those blocks run.
#![doc = include_str!("../../docs/src/from-pytorch.md")]

#[cfg(test)]
mod tests {
    const PAGE: &str = include_str!("../../docs/src/from-pytorch.md");

    /// One row of a table: the PyTorch cell and the Rust cell, without their backticks.
    struct Row {
        line: usize,
        pytorch: String,
        rust: String,
    }

    /// A table and the ```rust block that follows it.
    struct Table {
        line: usize,
        rows: Vec<Row>,
        block: Option<String>,
    }

    /// The cells of a table line, split on the `|`s outside inline code.
    fn cells(line: &str) -> Vec<&str> {
        let mut out = Vec::new();
        let (mut in_code, mut start) = (false, 0);
        for (i, c) in line.char_indices() {
            match c {
                '`' => in_code = !in_code,
                '|' if !in_code => {
                    out.push(line[start..i].trim());
                    start = i + 1;
                }
                _ => {}
            }
        }
        out.push(line[start..].trim());
        // A row starts and ends with `|`: drop the empty text outside them.
        out.into_iter().filter(|c| !c.is_empty()).collect()
    }

    /// The code of a cell that is exactly one inline code span.
    fn code(cell: &str, line: usize) -> String {
        let inner = cell.strip_prefix('`').and_then(|c| c.strip_suffix('`'));
        match inner {
            Some(c) if !c.is_empty() && !c.contains('`') => c.to_string(),
            _ => panic!("line {line}: the cell {cell:?} is not one inline code span"),
        }
    }

    /// The page's tables, each with the first ```rust block after it (before the next table).
    fn tables(page: &str) -> Vec<Table> {
        let mut tables: Vec<Table> = Vec::new();
        let mut fence: Option<(bool, String)> = None; // (is rust, text so far)
        let mut prev_was_table = false;
        for (i, line) in page.lines().enumerate() {
            let n = i + 1;
            if let Some(rest) = line.trim_start().strip_prefix("```") {
                match fence.take() {
                    None => fence = Some((rest.trim() == "rust", String::new())),
                    Some((true, text)) => {
                        if let Some(t) = tables.last_mut().filter(|t| t.block.is_none()) {
                            t.block = Some(text);
                        }
                    }
                    Some((false, _)) => {}
                }
                prev_was_table = false;
                continue;
            }
            if let Some((_, text)) = fence.as_mut() {
                text.push_str(line);
                text.push('\n');
                continue;
            }
            let is_table = line.starts_with('|');
            if is_table && !prev_was_table {
                // The header row; the separator row follows.
                if let Some(t) = tables.last() {
                    assert!(t.block.is_some(), "line {}: the table has no ```rust block before the next table", t.line);
                }
                assert_eq!(cells(line), ["PyTorch", "Rust"], "line {n}: a table's header");
                tables.push(Table { line: n, rows: Vec::new(), block: None });
            } else if is_table && !line.starts_with("|---") {
                let c = cells(line);
                assert_eq!(c.len(), 2, "line {n}: a row has a PyTorch and a Rust cell: {line}");
                let row = Row { line: n, pytorch: code(c[0], n), rust: code(c[1], n) };
                tables.last_mut().unwrap().rows.push(row);
            }
            prev_was_table = is_table;
        }
        assert!(fence.is_none(), "a code block is not closed");
        tables
    }

    /// Every Rust cell of every table is run, verbatim, by the block under its table; the
    /// page has at least 60 rows and spells out no run of `None`.
    #[test]
    fn every_rust_cell_is_run_by_the_block_under_its_table() {
        let tables = tables(PAGE);
        let mut rows = 0;
        for t in &tables {
            let block =
                t.block.as_deref().unwrap_or_else(|| panic!("line {}: no ```rust block follows the table", t.line));
            assert!(!t.rows.is_empty(), "line {}: an empty table", t.line);
            for r in &t.rows {
                assert!(
                    block.contains(&r.rust),
                    "line {}: `{}` (for `{}`) is not in the block under its table",
                    r.line,
                    r.rust,
                    r.pytorch
                );
            }
            rows += t.rows.len();
        }
        assert!(rows >= 60, "the page has {rows} rows; it promises at least 60");
        assert!(!PAGE.contains("None, None"), "the page spells out a run of None");
    }

    #[test]
    fn the_parser_reads_cells_and_blocks() {
        assert_eq!(cells("| `a | b` | `c` |"), ["`a | b`", "`c`"]);
        let page = "| PyTorch | Rust |\n|---|---|\n| `x.t()` | `x.t()?` |\n\n```text\nx.t()?\n```\n\n```rust\nlet y = x.t()?;\n```\n";
        let t = tables(page);
        assert_eq!((t.len(), t[0].rows.len()), (1, 1));
        assert_eq!((t[0].rows[0].pytorch.as_str(), t[0].rows[0].rust.as_str()), ("x.t()", "x.t()?"));
        assert_eq!(t[0].block.as_deref(), Some("let y = x.t()?;\n"));
    }
}
