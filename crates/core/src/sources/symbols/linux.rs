//! `System.map` and `/proc/kallsyms` lines: `ADDR TYPE NAME`, and in kallsyms `\t[module]`
//! after the names of module symbols. Types `t`/`T` (text) and `W` (a weak symbol, in a
//! kernel map a weak function) are code; absolute (`A`/`a`), undefined (`U`, `w`, `v`) and
//! unknown types are skipped; every other type is data and ends the code before it.

use super::{Binding, Builder, Symbol};

/// What a line must look like, for the note on a damaged one.
const EXPECTED: &str = "`ADDR TYPE NAME [module]` (a hex address, a one-letter type, a name)";

/// Symbols of code type that mark where code ends.
const END_MARKERS: [&str; 4] = ["_etext", "_end", "_edata", "__entry_text_end"];

/// Whether a code symbol names a section's bounds rather than a function.
fn is_marker(name: &str) -> bool {
    matches!(name, "_stext" | "_text" | "_sinittext" | "startup_64")
        || (name.starts_with("__") && (name.ends_with("_start") || name.ends_with("_end")))
}

/// Reads line `n`.
pub(crate) fn line(b: &mut Builder, n: usize, line: &str) {
    let text = line.trim();
    if text.is_empty() {
        return;
    }
    let mut fields = text.split_whitespace();
    let (Some(addr), Some(ty), Some(name)) = (fields.next(), fields.next(), fields.next()) else {
        b.damaged(n, EXPECTED);
        return;
    };
    let module = fields
        .next()
        .and_then(|m| m.strip_prefix('[').and_then(|m| m.strip_suffix(']')));
    let addr = match u64::from_str_radix(addr, 16) {
        Ok(a) if addr.len() <= 16 => a,
        _ => {
            b.damaged(n, EXPECTED);
            return;
        }
    };
    let mut ty_chars = ty.chars();
    let (Some(ty), None) = (ty_chars.next(), ty_chars.next()) else {
        b.damaged(n, EXPECTED);
        return;
    };
    let binding = match ty {
        // The end of the kernel's text and image: markers, not functions.
        _ if END_MARKERS.contains(&name) => Binding::Data,
        't' | 'T' | 'W' if is_marker(name) => Binding::Marker,
        'T' => Binding::Global,
        'W' => Binding::Weak,
        't' => Binding::Local,
        'A' | 'a' | 'U' | 'w' | 'v' | 'V' => return,
        c if c.is_ascii_alphabetic() => Binding::Data,
        _ => {
            b.damaged(n, EXPECTED);
            return;
        }
    };
    if name.chars().any(char::is_control) {
        b.damaged(n, EXPECTED);
        return;
    }
    b.push(Symbol {
        addr,
        name,
        module,
        binding,
    });
}

#[cfg(test)]
mod tests {
    use crate::sources::symbols::{MapKind, SymbolMap};

    #[test]
    fn resolves_to_the_greatest_text_symbol_at_or_below() {
        let map = "ffffffff81000000 T _stext\n\
                   ffffffff81000000 T _text\n\
                   ffffffff8107e910 t native_write_msr\n\
                   ffffffff8107e990 T native_read_msr\n\
                   ffffffff81e01d32 T _etext\n\
                   ffffffff82000000 D some_data\n\
                   garbage\n\
                   ffffffffc0a01000 t kvm_vcpu_ioctl\t[kvm]\n";
        let m = SymbolMap::read(map.as_bytes(), "System.map");
        let Ok(m) = m else { panic!("{m:?}") };
        assert_eq!(m.kind, MapKind::Linux);
        assert_eq!(
            m.resolve(0xffff_ffff_8107_e914).map(|r| r.label()),
            Some("native_write_msr+0x4".into())
        );
        assert_eq!(m.resolve(0xffff_ffff_8200_0010), None, "data is not code");
        assert_eq!(
            m.resolve(0xffff_ffff_8000_0000),
            None,
            "below the first symbol"
        );
        assert_eq!(
            m.resolve(0xffff_ffff_c0a0_1008).map(|r| r.label()),
            Some("kvm_vcpu_ioctl [kvm]+0x8".into())
        );
        assert_eq!(m.notes.len(), 1, "{:?}", m.notes);
        assert_eq!(m.notes[0].line, Some(7));
    }

    #[test]
    fn long_names_are_cut_at_a_character_boundary() {
        let name = "\u{e9}".repeat(400);
        let map = format!("ffffffff81000000 t f{name}\t[x{name}]\n");
        let m = SymbolMap::read(map.as_bytes(), "map");
        let Ok(m) = m else { panic!("{m:?}") };
        let r = m.resolve(0xffff_ffff_8100_0000).map(|r| r.function.len());
        assert!(r.is_some_and(|n| n <= 512 + 64 + 3), "{r:?}");
    }

    #[test]
    fn an_unprivileged_kallsyms_dump_is_refused_with_the_reason() {
        let map = "0000000000000000 T _text\n0000000000000000 t native_write_msr\n";
        let err = SymbolMap::read(map.as_bytes(), "kallsyms")
            .err()
            .map(|e| e.to_string());
        assert!(err.is_some_and(|e| e.contains("kptr_restrict")));
    }
}
