use super::*;

#[test]
fn every_declaration_is_at_its_code_and_named_once() {
    for (i, decl) in BUILTIN.iter().enumerate() {
        assert_eq!(decl.id, OpId::builtin(i as u16 + 1), "{}", decl.name);
        assert_eq!(decl.default_kind().index(), Some(i), "{}", decl.name);
        assert_eq!(decl.default_kind().decl().name, decl.name);
        assert_eq!(builtin(decl.id).map(|d| d.name), Some(decl.name));
        let twins = BUILTIN.iter().filter(|d| d.name == decl.name).count();
        assert_eq!(twins, 1, "{} declared twice", decl.name);
    }
    assert!(builtin(OpId::builtin(0)).is_none());
    assert!(builtin(OpId::builtin(BUILTIN.len() as u16 + 1)).is_none());
    let vendor = OpId {
        namespace: Namespace::named("com.example.npu"),
        code: 1,
    };
    assert!(builtin(vendor).is_none());
}

#[test]
fn vendor_namespaces_are_stable_and_never_tensorplugs() {
    // FNV-1a of "a" (a published test vector): the hash never changes.
    assert_eq!(Namespace::named("a"), Namespace(0xe40c_292c));
    assert_ne!(Namespace::named(""), Namespace::TENSORPLUG);
    assert_ne!(Namespace::named("com.acme"), Namespace::named("com.acme2"));
}

fn window() -> Window {
    Window {
        size: [3, 5],
        stride: [2, 1],
        dilation: [1, 4],
        pad: [1, 2, 300, 0],
    }
}

#[test]
fn every_op_round_trips_its_attributes() {
    let kinds = [
        OpKind::MatMul {
            transpose_a: true,
            transpose_b: false,
        },
        OpKind::FusedMatMul {
            transpose_a: false,
            transpose_b: true,
            relu: true,
        },
        OpKind::Conv2D(window()),
        OpKind::AvgPoolGrad(window()),
        OpKind::FusedConv2D(window(), Activation::Relu6),
        OpKind::Transpose([2, 0, 1, 0, 0, 0]),
        OpKind::Conv2DInt8(window()),
        OpKind::AvgPoolInt8(window()),
        OpKind::MatMulInt8 { transpose_b: true },
    ];
    for kind in kinds
        .into_iter()
        .chain(BUILTIN.iter().map(OpDecl::default_kind))
    {
        assert_eq!(kind.decl().kind(&kind.attrs()), Some(kind), "{kind:?}");
    }
}

#[test]
fn stray_attribute_bytes_are_refused() {
    let mut a = Attrs::default();
    a.0[0] = RELU;
    assert_eq!(
        OpKind::MatMul {
            transpose_a: false,
            transpose_b: false
        }
        .decl()
        .kind(&a),
        None
    );
    assert_eq!(OpKind::Unary(Unary::RELU).decl().kind(&a), None);
    let mut a = OpKind::Conv2D(window()).attrs();
    a.0[WINDOW_BYTES] = 1;
    assert_eq!(OpKind::Conv2D(window()).decl().kind(&a), None);
    let mut a = OpKind::FusedConv2D(window(), Activation::None).attrs();
    a.0[WINDOW_BYTES] = 3;
    assert_eq!(
        OpKind::FusedConv2D(window(), Activation::None)
            .decl()
            .kind(&a),
        None
    );
    let mut a = Attrs::default();
    a.0[MAX_RANK] = 1;
    assert_eq!(OpKind::Transpose([0; MAX_RANK]).decl().kind(&a), None);
    let mut a = Attrs::default();
    a.0[0] = TRANSPOSE_A;
    let int8 = OpKind::MatMulInt8 { transpose_b: false };
    assert_eq!(int8.decl().kind(&a), None);
}

/// `docs/ops.md`'s catalogue table, from `BUILTIN`.
fn docs_table() -> std::string::String {
    use core::fmt::Write;
    let mut t = std::string::String::from(
        "| code | op | family | inputs | element types | attributes (bytes of the block) |\n|---|---|---|---|---|---|\n",
    );
    for decl in BUILTIN {
        let kind = decl.default_kind();
        let param = decl.param().map(|p| std::format!("{p}: f32 (4)"));
        let attrs = match kind {
            _ if param.is_some() => param.as_deref().unwrap_or_default(),
            _ if decl.record().is_some() => decl.record().map_or("", |r| r.attrs),
            OpKind::MatMul { .. } => "flags: transpose a, b (1)",
            OpKind::FusedMatMul { .. } => "flags: transpose a, b, ReLU (1)",
            OpKind::MatMulInt8 { .. } => "flags: transpose b (1)",
            OpKind::FusedConv2D(..) => "window (20), activation (1)",
            OpKind::Transpose(_) => "perm (6)",
            OpKind::Cast { .. } => "element types: from, to (2)",
            OpKind::Gather(_) | OpKind::SegmentSum(_) => "index type (1)",
            OpKind::ArgMax(_) | OpKind::ArgMin(_) => "output type (1)",
            OpKind::RandomUniform { .. } => "key, counter (24)",
            OpKind::Concat(_) => "element type (1)",
            k if k.window().is_some() => "window (20)",
            _ => "-",
        };
        let family = match decl.form {
            Form::Unary(..) => "unary",
            Form::Binary(..) => "binary",
            Form::Record(_) => "record",
            _ if kind.is_int8() => "int8",
            _ => "its own",
        };
        let dtypes = match kind.operand_types() {
            Some((inputs, output)) => {
                let inputs: std::vec::Vec<&str> = inputs.iter().map(|d| d.name()).collect();
                std::format!("{} → {}", inputs.join(", "), output.name())
            }
            None => {
                let all: std::vec::Vec<&str> = decl.dtypes.iter().map(DType::name).collect();
                all.join(", ")
            }
        };
        writeln!(
            t,
            "| {} | `{}` | {family} | {} | {} | {attrs} |",
            decl.id.code, decl.name, decl.inputs, dtypes
        )
        .unwrap();
    }
    t
}

#[test]
fn the_docs_catalogue_table_is_current() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/ops.md");
    let text = std::fs::read_to_string(&path).unwrap();
    let (begin, end) = ("<!-- catalogue:begin -->\n", "<!-- catalogue:end -->");
    let start = text.find(begin).expect("catalogue:begin marker") + begin.len();
    let stop = text.find(end).expect("catalogue:end marker");
    let want = docs_table();
    if text[start..stop] != want {
        if std::env::var_os("TENSORPLUG_BLESS").is_some() {
            let updated = [&text[..start], &want, &text[stop..]].concat();
            std::fs::write(&path, updated).unwrap();
            return;
        }
        panic!(
            "docs/ops.md's catalogue table is stale (rerun with TENSORPLUG_BLESS=1); it should \
             read:\n{want}"
        );
    }
}

#[test]
fn every_elementwise_declaration_has_its_rules_and_only_those_do() {
    for decl in BUILTIN {
        let elementwise = matches!(decl.form, Form::Unary(..) | Form::Binary(..));
        let rules = ELEMENTWISE_RULES.iter().filter(|(c, _)| *c == decl.id.code);
        assert_eq!(rules.count(), usize::from(elementwise), "{}", decl.name);
    }
    for (code, rules) in ELEMENTWISE_RULES {
        let decl = builtin(OpId::builtin(*code));
        assert!(decl.is_some(), "rules for code {code}");
        // An op with a parameter has the reference that takes it and the
        // values its cases try; the others have neither.
        let with = decl.and_then(OpDecl::param).is_some();
        let takes = matches!(rules.reference, Reference::WithParam(_));
        assert_eq!(takes, with, "code {code}");
        assert_eq!(!rules.params.is_empty(), with, "code {code}");
    }
    let leaky = Unary::named("LeakyRelu").with_param(0.25);
    assert_eq!((leaky.apply(-2.0), leaky.apply(3.0)), (-0.5, 3.0));
    assert_eq!(Unary::named("Exp").with_param(0.25), Unary::named("Exp"));
    let attrs = OpKind::Unary(leaky).attrs();
    assert_eq!(leaky.decl().kind(&attrs), Some(OpKind::Unary(leaky)));
    let grad = Binary::named("LeakyReluGrad").with_param(-1.5);
    assert_eq!((grad.apply(2.0, -1.0), grad.apply(2.0, 1.0)), (-3.0, 2.0));
    let attrs = OpKind::Binary(grad).attrs();
    assert_eq!(grad.decl().kind(&attrs), Some(OpKind::Binary(grad)));
    let mut stray = attrs;
    stray.0[4] = 1;
    assert_eq!(grad.decl().kind(&stray), None);
    assert_eq!(std::format!("{leaky:?}"), "LeakyRelu(alpha=0.25)");
    assert_eq!(Unary::named("Exp").apply(0.0), 1.0);
    assert_eq!(Binary::named("Pow").apply(2.0, 10.0), 1024.0);
    assert_eq!(
        Unary::all().count() + Binary::all().count(),
        ELEMENTWISE_RULES.len()
    );
}

#[test]
fn every_record_has_one_reference_and_each_reference_a_record() {
    use super::records::REFERENCES;
    for decl in BUILTIN {
        let record = matches!(decl.form, Form::Record(_));
        let refs = REFERENCES.iter().filter(|r| r.code == decl.id.code);
        assert_eq!(refs.count(), usize::from(record), "{}", decl.name);
        assert_eq!(decl.reference().is_some(), record, "{}", decl.name);
    }
    for r in REFERENCES {
        let decl = builtin(OpId::builtin(r.code));
        assert!(
            decl.is_some_and(|d| d.record().is_some()),
            "code {}",
            r.code
        );
        assert!(!r.cases.is_empty(), "code {}", r.code);
    }
    // A record's attribute block is judged by its shape rule, and the
    // kind round-trips through it.
    let cumsum = super::named("Cumsum").unwrap();
    let mut attrs = Attrs::default();
    attrs.0[..2].copy_from_slice(&[1, 0]);
    let kind = cumsum.kind(&attrs).unwrap();
    assert_eq!(kind.attrs(), attrs);
    assert_eq!(cumsum.kind(&kind.attrs()), Some(kind));
    let t = crate::accelerator::TensorDesc::new(
        crate::accelerator::DeviceAddr(0),
        DType::F32,
        crate::accelerator::Shape::new(&[2, 3, 4]).unwrap(),
    );
    let inputs = [t];
    let validate = |attrs: Attrs| {
        let kind = cumsum.kind(&attrs).unwrap();
        let op = crate::accelerator::OpDesc {
            kind,
            inputs: &inputs,
            output: t,
            op_id: 0,
        };
        op.validate()
    };
    assert_eq!(validate(attrs), Ok(()));
    attrs.0[0] = 2;
    let refused = crate::accelerator::ShapeError::Attrs;
    assert_eq!(validate(attrs), Err(refused));
}
