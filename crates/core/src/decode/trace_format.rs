//! The tracefs `format` description of one tracepoint, as the kernel prints it and as perf
//! embeds it in perf.data:
//!
//! ```text
//! name: kvm_pio
//! ID: 110
//! format:
//!     field:unsigned short common_type;    offset:0;    size:2;    signed:0;
//!     ...
//!     field:unsigned int port;    offset:12;    size:4;    signed:0;
//!
//! print fmt: "pio_%s at 0x%x ...", ...
//! ```
//!
//! Shared by every source that decodes raw tracepoint payloads (perf.data, live tracefs).
//!
//! Old kernels omit `signed:`; arrays (`u8 insn[15]`) and dynamic fields (`__data_loc char[]
//! name`) are kept with their declared offset and size. Payloads are decoded from these
//! offsets only, so any kernel's layout works.

/// One field of a tracepoint payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field {
    pub name: String,
    /// The C type as declared (`unsigned int`, `__data_loc char[]`, `u8`).
    pub ctype: String,
    pub offset: usize,
    pub size: usize,
    pub signed: bool,
    /// Declared with `[N]` (a fixed array) or as `__data_loc`/`__rel_loc`.
    pub array: bool,
}

/// One tracepoint's format.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventFormat {
    /// The event system (`kvm`, `kvmmmu`, `ftrace`).
    pub system: String,
    pub name: String,
    pub id: u32,
    pub fields: Vec<Field>,
}

impl EventFormat {
    /// The field called `name`.
    pub fn field(&self, name: &str) -> Option<&Field> {
        self.fields.iter().find(|f| f.name == name)
    }
}

/// Parses one `format` text of `system`. Lines that are not understood are skipped; a format
/// without `name:` or a numeric `ID:` is an error.
pub fn parse(system: &str, text: &str) -> Result<EventFormat, String> {
    let mut name = None;
    let mut id = None;
    let mut fields = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if let Some(v) = line.strip_prefix("name:") {
            name = Some(v.trim().to_string());
        } else if let Some(v) = line.strip_prefix("ID:") {
            id = v.trim().parse::<u32>().ok();
        } else if line.starts_with("field:") {
            if let Some(f) = field(line) {
                fields.push(f);
            }
        } else if line.starts_with("print fmt:") {
            break;
        }
    }
    let name = name.ok_or_else(|| format!("a {system} event format has no `name:` line"))?;
    let id = id.ok_or_else(|| format!("event format {system}:{name} has no numeric `ID:` line"))?;
    Ok(EventFormat {
        system: system.to_string(),
        name,
        id,
        fields,
    })
}

/// `field:unsigned int port;    offset:12;    size:4;    signed:0;`
fn field(line: &str) -> Option<Field> {
    let mut decl = None;
    let (mut offset, mut size, mut signed) = (None, None, false);
    for part in line.split(';') {
        let part = part.trim();
        if let Some(v) = part.strip_prefix("field:") {
            decl = Some(v.trim());
        } else if let Some(v) = part.strip_prefix("offset:") {
            offset = v.trim().parse().ok();
        } else if let Some(v) = part.strip_prefix("size:") {
            size = v.trim().parse().ok();
        } else if let Some(v) = part.strip_prefix("signed:") {
            signed = v.trim() == "1";
        }
    }
    let decl = decl?;
    // `u8 insn[15]`: the array suffix follows the name. (`__data_loc char[] name` has its
    // brackets in the type, so it does not end in `]`.)
    let (head, array) = match decl.strip_suffix(']').and_then(|d| d.rfind('[')) {
        Some(i) => (decl[..i].trim_end(), true),
        None => (decl, false),
    };
    let split = head
        .rfind(|c: char| c.is_whitespace() || c == '*')
        .map_or(0, |i| i + 1);
    let name = head[split..].trim();
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return None;
    }
    let ctype = head[..split].trim().to_string();
    let dynamic = ctype.starts_with("__data_loc") || ctype.starts_with("__rel_loc");
    Some(Field {
        name: name.to_string(),
        ctype,
        offset: offset?,
        size: size?,
        signed,
        array: array || dynamic,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const KVM_EXIT: &str = "name: kvm_exit\nID: 103\nformat:\n\
        \tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
        \tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n\
        \tfield:unsigned int exit_reason;\toffset:8;\tsize:4;\tsigned:0;\n\
        \tfield:unsigned long guest_rip;\toffset:16;\tsize:8;\tsigned:0;\n\
        \tfield:u32 isa;\toffset:24;\tsize:4;\tsigned:0;\n\
        \tfield:__u8 insn[15];\toffset:28;\tsize:15;\tsigned:0;\n\
        \tfield:__data_loc char[] name;\toffset:44;\tsize:4;\tsigned:0;\n\
        \tfield:const char * str;\toffset:48;\tsize:8;\tsigned:0;\n\
        \nprint fmt: \"field:int bogus; offset:0;\", REC->x\n";

    #[test]
    fn fields_with_offsets_sizes_and_names() {
        let f = parse("kvm", KVM_EXIT).unwrap();
        assert_eq!(
            (f.system.as_str(), f.name.as_str(), f.id),
            ("kvm", "kvm_exit", 103)
        );
        let names: Vec<&str> = f.fields.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "common_type",
                "common_pid",
                "exit_reason",
                "guest_rip",
                "isa",
                "insn",
                "name",
                "str"
            ]
        );
        let er = f.field("exit_reason").unwrap();
        assert_eq!(
            (er.offset, er.size, er.signed, er.ctype.as_str()),
            (8, 4, false, "unsigned int")
        );
        assert!(f.field("common_pid").unwrap().signed);
        assert!(f.field("insn").unwrap().array);
        let dl = f.field("name").unwrap();
        assert!(dl.array && dl.ctype.starts_with("__data_loc"));
        assert_eq!(f.field("str").unwrap().ctype, "const char *");
    }

    #[test]
    fn old_formats_without_signed_and_broken_formats() {
        let old =
            "name: kvm_pio\nID: 7\nformat:\n\tfield:unsigned int port;\toffset:12;\tsize:4;\n";
        let f = parse("kvm", old).unwrap();
        assert_eq!(
            f.field("port").map(|p| (p.offset, p.size, p.signed)),
            Some((12, 4, false))
        );
        assert!(parse("kvm", "ID: 3\n").is_err());
        assert!(parse("kvm", "name: x\nID: y\n").is_err());
        let junk = parse(
            "kvm",
            "name: x\nID: 1\n\tfield:;offset:;size:\n\tfield:int a b;\n",
        )
        .unwrap();
        assert!(junk.fields.is_empty());
    }
}
