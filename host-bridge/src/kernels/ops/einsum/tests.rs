//! The lowering's plans, without a device.

use super::*;

fn plan(eq: &str, shapes: &[&[u64]]) -> KernelResult<Plan> {
    let shapes: Vec<Shape> = shapes.iter().map(|d| Shape::new(d).unwrap()).collect();
    Equation::parse(eq)?.plan(&shapes)
}

#[test]
fn einsum_dense_projections_are_one_matmul() {
    let p = plan("abc,cde->abde", &[&[8, 16, 32], &[32, 2, 4]]).unwrap();
    assert_eq!(p.out_dims, [8, 16, 2, 4]);
    assert_eq!(p.transposes, [None, None]);
    let mm = p.matmul.unwrap();
    assert_eq!((mm.a, mm.b, mm.a_batch.len()), ([128, 32], [32, 8], 0));
    assert!(p.out_perm.is_none() && !p.swap);
    let p = plan("abcd,cde->abe", &[&[8, 16, 2, 4], &[2, 4, 32]]).unwrap();
    assert_eq!(p.matmul.unwrap().a, [128, 8]);
}

#[test]
fn attention_scores_transpose_what_they_must() {
    // key [a,e,c,d], query [a,b,c,d] → scores [a,c,b,e]: query is the
    // left-hand side (swapped), key a transposed right-hand side.
    let p = plan("aecd,abcd->acbe", &[&[2, 5, 3, 4], &[2, 6, 3, 4]]).unwrap();
    assert!(p.swap);
    assert_eq!(p.out_dims, [2, 3, 6, 5]);
    let mm = p.matmul.unwrap();
    assert_eq!((mm.a_batch, mm.b_batch), (vec![2, 3], vec![2, 3]));
    assert_eq!(p.transposes[1].unwrap()[..4], [0, 2, 1, 3]);
    assert_eq!(p.transposes[0].unwrap()[..4], [0, 2, 1, 3]);
    assert!(mm.t.b && !mm.t.a && p.out_perm.is_none());
    // scores [a,c,b,e] · value [a,e,c,d] → [a,b,c,d]: the result is
    // [a,c,b,d], transposed into the output.
    let p = plan("acbe,aecd->abcd", &[&[2, 3, 6, 5], &[2, 5, 3, 4]]).unwrap();
    assert_eq!(p.out_perm.unwrap()[..4], [0, 2, 1, 3]);
    assert_eq!(p.transposes[0], None);
}

#[test]
fn ellipsis_broadcast_and_one_operand() {
    let p = plan("...ij,jk->...ik", &[&[2, 3, 4, 5], &[5, 6]]).unwrap();
    assert_eq!(p.out_dims, [2, 3, 4, 6]);
    let p = plan("...ij,...jk->...ik", &[&[1, 4, 5], &[3, 5, 6]]).unwrap();
    assert_eq!(p.out_dims, [3, 4, 6]);
    assert!(plan("bij,bjk->bik", &[&[1, 4, 5], &[3, 5, 6]]).is_err());
    let p = plan("ij->ji", &[&[2, 3]]).unwrap();
    assert!(p.transposes[0].is_some() && p.matmul.is_none());
    assert_eq!(plan("ij,jk", &[&[2, 3], &[3, 4]]).unwrap().out_dims, [2, 4]);
}

#[test]
fn other_equations_fail_naming_themselves() {
    for (eq, shapes) in [
        ("ij->i", vec![&[3u64, 4, 5][..]]),
        ("...ij->ij", vec![&[2, 3, 4][..]]),
        ("ij,jk,kl->il", vec![&[2, 3][..], &[3, 4][..], &[4, 5][..]]),
    ] {
        let err = format!("{:?}", plan(eq, &shapes).unwrap_err());
        assert!(err.contains(eq), "{eq}: {err}");
    }
    assert!(plan("ij,jk->ik", &[&[2, 3], &[4, 5]]).is_err());
}

/// `lowers` (what the graph pass asks, without shapes) agrees with the
/// lowering itself on shapes that fit each equation.
#[test]
fn lowers_says_without_shapes_what_plan_does() {
    for (eq, shapes, ok) in [
        (
            "abc,cde->abde",
            vec![&[8u64, 16, 32][..], &[32, 2, 4][..]],
            true,
        ),
        ("bij,bjk->bik", vec![&[2, 3, 4][..], &[2, 4, 5][..]], true),
        (
            "...ij,...jk->...ik",
            vec![&[2, 3, 4][..], &[4, 5][..]],
            true,
        ),
        ("ij,jk", vec![&[2, 3][..], &[3, 4][..]], true),
        ("ij->ji", vec![&[2, 3][..]], true),
        ("ij", vec![&[2, 3][..]], true),
        ("ij->i", vec![&[3, 4][..]], true),
        ("ij,jk->k", vec![&[2, 3][..], &[3, 4][..]], true),
        ("ij->", vec![&[3, 4][..]], true),
        ("...ij->ij", vec![&[2, 3, 4][..]], false),
        (
            "ij,jk,kl->il",
            vec![&[2, 3][..], &[3, 4][..], &[4, 5][..]],
            false,
        ),
    ] {
        let lowers = Equation::parse(eq).is_ok_and(|e| e.lowers());
        assert_eq!(lowers, ok, "{eq}");
        assert_eq!(plan(eq, &shapes).is_ok(), ok, "{eq}");
    }
    // The exception: a repeated label is lowered (eagerly) with a
    // synchronous host write, which graphs leave to the CPU.
    for (eq, shapes) in [("ii->i", vec![&[3u64, 3][..]]), ("ii", vec![&[3, 3][..]])] {
        assert!(!Equation::parse(eq).unwrap().lowers(), "{eq}");
        assert!(plan(eq, &shapes).is_ok(), "{eq}");
    }
}

#[test]
fn a_repeated_label_takes_the_diagonal_then_what_else_the_equation_says() {
    // The trace: the diagonal [3], then summed.
    let p = plan("ii", &[&[3, 3]]).unwrap();
    let d = p.diagonals[0].as_ref().unwrap();
    assert_eq!(
        (d.indices.clone(), d.dims.clone()),
        (vec![0, 4, 8], vec![3])
    );
    assert_eq!(
        p.reductions[0].as_ref().map(|r| (r.rows, r.len)),
        Some((1, 3))
    );
    assert!(p.out_dims.is_empty());
    // `iij,jk->ik`: [i, j] after the diagonal, then one MatMul.
    let p = plan("iij,jk->ik", &[&[2, 2, 3], &[3, 4]]).unwrap();
    assert_eq!(p.diagonals[0].as_ref().unwrap().labels, b"ji");
    assert_eq!(p.out_dims, [2, 4]);
    assert!(p.matmul.is_some());
    // Sizes of a repeated label must agree, as on TF's CPU.
    assert!(plan("ii->i", &[&[2, 3]]).is_err());
}

#[test]
fn labels_summed_within_one_operand_are_summed_first() {
    // `ij->i`: j is last already; [3, 4] summed as 3 rows of 4.
    let p = plan("ij->i", &[&[3, 4]]).unwrap();
    let r = Reduction {
        perm: None,
        kept: vec![3],
        rows: 3,
        len: 4,
    };
    assert_eq!(p.reductions, [Some(r)]);
    assert_eq!((p.out_dims, p.transposes), (vec![3], vec![None]));
    // `ij->j`: i moved last first; then a plain copy.
    let p = plan("ij->j", &[&[3, 4]]).unwrap();
    let r = p.reductions[0].as_ref().unwrap();
    assert_eq!(
        (r.perm.unwrap()[..2].to_vec(), r.rows, r.len),
        (vec![1, 0], 4, 3)
    );
    // Everything summed: a scalar.
    let p = plan("ij->", &[&[3, 4]]).unwrap();
    assert!(p.out_dims.is_empty());
    assert_eq!(
        p.reductions[0].as_ref().map(|r| (r.rows, r.len)),
        Some((1, 12))
    );
    // Two operands: b's own label l summed, then a MatMul over j.
    let p = plan("ij,jkl->ik", &[&[2, 3], &[3, 4, 5]]).unwrap();
    assert_eq!(p.reductions[0], None);
    let r = p.reductions[1].as_ref().unwrap();
    assert_eq!((r.kept.clone(), r.rows, r.len), (vec![3, 4], 12, 5));
    let mm = p.matmul.unwrap();
    assert_eq!((mm.a, mm.b, p.out_dims), ([2, 3], [3, 4], vec![2, 4]));
}

/// Found by fuzzing (`kernel_attrs`): these panicked or overflowed.
#[test]
fn an_output_above_rank_6_and_huge_empty_operands_are_refused() {
    let one = [1u64; 4];
    assert!(plan("abcd,efgh->abcdefgh", &[&one, &one]).is_err());
    let huge = 1u64 << 40;
    let err = plan("abc,cd->abd", &[&[huge, huge, 0], &[0, 5]]).unwrap_err();
    assert!(format!("{err:?}").contains("2^64"), "{err:?}");
}

#[test]
fn an_output_that_interleaves_groups_is_permuted_label_by_label() {
    // `ij,bjk->bik`: the product is [i, b·k] (b and k merged as the right
    // operand's free labels); its transpose permutes [i, b, k]. Permuting
    // the merged [i, b·k] by a 3-axis perm failed on the device.
    let p = plan("ij,bjk->bik", &[&[4, 5], &[3, 5, 6]]).unwrap();
    assert_eq!(p.out_dims, [3, 4, 6]);
    assert_eq!(p.matmul.unwrap().out_shape().unwrap().dims(), [4, 18]);
    assert_eq!(p.result_dims, [4, 3, 6]);
    assert_eq!(p.out_perm.unwrap()[..3], [1, 0, 2]);
    // `...` broadcasting the left operand's own axis: the same.
    let p = plan("...ij,...jk->...ik", &[&[2, 3, 4, 5], &[3, 5, 6]]).unwrap();
    assert_eq!(p.out_dims, [2, 3, 4, 6]);
    assert_eq!(p.result_dims.iter().product::<u64>(), 2 * 3 * 4 * 6);
    assert!(p.out_perm.is_some());
}
