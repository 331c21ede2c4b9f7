//! Tests of splitting a launch script into commands and words (`config::shell`).

use super::*;

fn words(text: &str) -> Vec<Vec<String>> {
    split(text)
        .unwrap()
        .into_iter()
        .map(|c| c.iter().map(literal).collect())
        .collect()
}

#[test]
fn continuations_quotes_comments() {
    let w = words(
        "LC_ALL=C \\\n/usr/bin/qemu-system-x86_64 \\\n-cpu 'qemu64,hv-vendor-id=KVM Hv' # c\n",
    );
    assert_eq!(
        w,
        vec![vec![
            "LC_ALL=C",
            "/usr/bin/qemu-system-x86_64",
            "-cpu",
            "qemu64,hv-vendor-id=KVM Hv"
        ]]
    );
    assert_eq!(
        words("a \"b \\\"c\\\"\" ''; d && e"),
        vec![vec!["a", "b \"c\"", ""], vec!["d"], vec!["e"]]
    );
}

#[test]
fn expansions_are_parts() {
    let c = split("$QEMU -cpu \"${CPU:-host},hv_relaxed\" $(nproc) A=(x \"y z\")\n").unwrap();
    let w = &c[0];
    assert!(matches!(&w[0].parts[0], Part::Param(p) if p.name == "QEMU" && !p.quoted));
    match &w[2].parts[0] {
        Part::Param(p) => {
            assert!(p.quoted && p.written == "${CPU:-host}");
            assert!(
                matches!(&p.op, ParamOp::Default { colon: true, word } if literal(word) == "host")
            );
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(&w[3].parts[0], Part::Subst(s) if s == "$(nproc)"));
    assert!(matches!(&w[4].parts[1], Part::Array(e) if e.len() == 2));
}

#[test]
fn redirections_and_heredocs_are_skipped() {
    let w = words("qemu -a 2>&1 >/dev/null | tee log\ncat <<EOF\n-cpu x\nEOF\nnext\n");
    assert_eq!(
        w,
        vec![
            vec!["qemu", "-a"],
            vec!["tee", "log"],
            vec!["cat"],
            vec!["next"]
        ]
    );
}

#[test]
fn lines_and_errors() {
    let c = split("a \\\n  b\nc 'x\ny' d").unwrap();
    assert_eq!(c[0][1].line, 2);
    assert_eq!(c[1][2].line, 4);
    let e = split("a\nb 'open").unwrap_err();
    assert_eq!(e.line, 2);
    assert!(e.message.contains("expected"));
    assert!(split("x ${A:-").is_err());
    assert!(split("x $(a").is_err());
}

#[test]
fn binaries() {
    assert!(is_qemu_binary("/usr/bin/kvm"));
    assert!(is_qemu_binary("qemu-system-x86_64"));
    assert!(!is_qemu_binary("qemu-img"));
}
