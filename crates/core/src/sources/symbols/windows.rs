//! A Windows linker map (`link /MAP`): after the header ` Address  Publics by Value  Rva+Base
//! Lib:Object`, lines ` 0001:00000000  name  0000000140001000 f  lib:object.obj`. The
//! `Rva+Base` column is the address at the preferred load base; the flag `f` marks a
//! function. Symbols without it are data and end the function before them.

use super::{Binding, Builder, Symbol};

const EXPECTED: &str = "`SEG:OFFSET NAME RVA+BASE [f] [i] LIB:OBJECT`";

/// Whether `line` is the header of the `Publics by Value` section.
pub(crate) fn is_publics_header(line: &str) -> bool {
    line.contains("Publics by Value") && line.contains("Rva+Base")
}

/// Whether `line` is one a Windows map starts with (before its sections).
pub(crate) fn is_map_preamble(line: &str) -> bool {
    let t = line.trim_start();
    t.starts_with("Timestamp is ") || t.starts_with("Preferred load address is ")
}

/// Reads line `n` of the `Publics by Value` (or `Static symbols`) section.
pub(crate) fn line(b: &mut Builder, n: usize, line: &str) {
    let text = line.trim();
    if text.is_empty()
        || text.starts_with("entry point at")
        || text.starts_with("Static symbols")
        || text.starts_with("Exports")
        || text.starts_with("FIXUPS")
    {
        return;
    }
    let mut fields = text.split_whitespace();
    let (Some(seg), Some(name), Some(addr)) = (fields.next(), fields.next(), fields.next()) else {
        b.damaged(n, EXPECTED);
        return;
    };
    let seg_ok = seg
        .split_once(':')
        .is_some_and(|(s, o)| hex(s).is_some() && hex(o).is_some());
    let Some(addr) = hex(addr).filter(|_| seg_ok) else {
        b.damaged(n, EXPECTED);
        return;
    };
    if addr == 0 {
        // `<absolute>` and linker-defined symbols at 0: not in the image.
        return;
    }
    let function = fields.take(2).any(|f| f == "f");
    b.push(Symbol {
        addr,
        name,
        module: None,
        binding: if function {
            Binding::Global
        } else {
            Binding::Data
        },
    });
}

fn hex(s: &str) -> Option<u64> {
    (!s.is_empty() && s.len() <= 16)
        .then(|| u64::from_str_radix(s, 16).ok())
        .flatten()
}

#[cfg(test)]
mod tests {
    use crate::sources::symbols::{MapKind, SymbolMap};

    #[test]
    fn reads_the_publics_by_value_section() {
        let map = " ntoskrnl\n\n Timestamp is 5f8d2a10 (Mon Oct 19 08:00:00 2020)\n\n \
                   Preferred load address is 0000000140000000\n\n \
                   Address         Publics by Value              Rva+Base               Lib:Object\n\n \
                   0000:00000000       ___safe_se_handler_count   0000000000000000     <absolute>\n \
                   0001:00000000       KeBugCheckEx               0000000140001000 f   ntos:bugcheck.obj\n \
                   0001:00000200       HalpTimerQuery             0000000140001200 f i hal:timer.obj\n \
                   0002:00000000       KiDataTable                0000000140200000     ntos:data.obj\n";
        let m = SymbolMap::read(map.as_bytes(), "ntoskrnl.map");
        let Ok(m) = m else { panic!("{m:?}") };
        assert_eq!(m.kind, MapKind::Windows);
        assert_eq!(m.functions, 2);
        assert_eq!(
            m.resolve(0x1_4000_1234).map(|r| r.label()),
            Some("HalpTimerQuery+0x34".into())
        );
        assert_eq!(m.resolve(0x1_4020_0004), None);
    }
}
