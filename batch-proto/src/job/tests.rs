use super::*;
use crate::shape::{MoldConfig, SpeedupModel, Step};

#[test]
fn states_parse_from_names_and_codes() {
    for st in JobState::ALL {
        assert_eq!(st.code().parse::<JobState>().unwrap(), st);
        assert_eq!(st.name().to_lowercase().parse::<JobState>().unwrap(), st);
    }
    assert_eq!("canceled".parse::<JobState>().unwrap(), JobState::Cancelled);
    assert!("XX".parse::<JobState>().is_err());
    assert_eq!(
        serde_json::to_string(&JobState::Timeout).unwrap(),
        "\"TIMEOUT\""
    );
}

#[test]
fn dependency_lists_parse_like_slurm() {
    let d = Dependency::parse_list("afterok:12:13,afterany:9,singleton").unwrap();
    assert_eq!(
        d,
        vec![
            Dependency::On {
                kind: DepKind::AfterOk,
                job: 12
            },
            Dependency::On {
                kind: DepKind::AfterOk,
                job: 13
            },
            Dependency::On {
                kind: DepKind::AfterAny,
                job: 9
            },
            Dependency::Singleton,
        ]
    );
    assert_eq!(d[0].to_string(), "afterok:12");
    // Slurm 22.05: job ids without a kind (`-d 12`, `-d 12:13`) are afterany.
    let any = |job| Dependency::On {
        kind: DepKind::AfterAny,
        job,
    };
    assert_eq!(Dependency::parse_list("12").unwrap(), vec![any(12)]);
    assert_eq!(
        Dependency::parse_list("12:13,afterok:4").unwrap(),
        vec![
            any(12),
            any(13),
            Dependency::On {
                kind: DepKind::AfterOk,
                job: 4
            }
        ]
    );
    // Slurm's `after:ID+MINUTES` is refused as what it is, not as a bad job id.
    let e = Dependency::parse_list("after:5+10")
        .unwrap_err()
        .to_string();
    assert!(e.contains("a delay after the other job's start"), "{e}");
    for bad in [
        "0",
        "12x",
        "afterok",
        "afterok:x",
        "before:3",
        "afterok:1?afterany:2",
        "",
        "after:0",
    ] {
        assert!(Dependency::parse_list(bad).is_err(), "{bad}");
    }
}

#[test]
fn the_script_limit_counts_the_script_bytes_not_their_escaping() {
    let mut s = JobSpec::new("x", "/w", 1, 60_000);
    // Quotes double on the wire; a script at the limit still fits in one frame.
    s.script = "\"".repeat(MAX_SCRIPT);
    s.validate().unwrap();
    assert!(crate::frame::encode(&s).is_ok());
    s.script.push('x');
    let e = s.validate().unwrap_err().to_string();
    assert_eq!(
        e,
        format!(
            "invalid script: the script is {} bytes, more than the limit of {MAX_SCRIPT} bytes",
            MAX_SCRIPT + 1
        )
    );
    s.script = "x".repeat(MAX_SCRIPT + 1);
    assert_eq!(s.validate().unwrap_err().to_string(), e);
}

#[test]
fn spec_validation_names_the_field() {
    let ok = JobSpec::new("#!/bin/sh\ntrue\n", "/tmp", 1, 60_000);
    ok.validate().unwrap();
    let mut s = ok.clone();
    s.work_dir = "relative".into();
    assert!(s.validate().unwrap_err().to_string().contains("work_dir"));
    let mut s = ok.clone();
    s.shape = JobShape::Rigid {
        nodes: 0,
        time_limit: 1,
    };
    assert!(s.validate().unwrap_err().to_string().contains("node"));
    let mut s = ok.clone();
    s.environment.push(("A=B".into(), "x".into()));
    assert!(s.validate().is_err());
    let mut s = ok;
    s.shape = JobShape::Evolving { steps: vec![] };
    assert!(s.validate().is_err());
}

#[test]
fn shapes_report_their_extent() {
    let e = JobShape::Evolving {
        steps: vec![Step::new(500, 5), Step::new(3600, 10)],
    };
    assert_eq!((e.max_nodes(), e.time_limit()), (10, 4100));
    let m = JobShape::Moldable {
        configs: vec![
            MoldConfig {
                nodes: 4,
                walltime: 60,
            },
            MoldConfig {
                nodes: 8,
                walltime: 35,
            },
        ],
        model: None,
        weight: None,
    };
    assert_eq!((m.max_nodes(), m.time_limit()), (8, 60));
    assert_eq!(m.least_nodes(), 4);
    let amdahl = JobShape::Moldable {
        configs: vec![MoldConfig {
            nodes: 64,
            walltime: 5,
        }],
        model: Some(MoldModel {
            model: SpeedupModel::Amdahl {
                work: 1000,
                serial: 0.5,
            },
            min_nodes: 2,
            max_nodes: 32,
        }),
        weight: Some(2.0),
    };
    // p(2) = 1000 × (0.5 + 0.5 / 2) = 750 ms, the longest; 2..=64 nodes.
    assert_eq!(
        (
            amdahl.least_nodes(),
            amdahl.max_nodes(),
            amdahl.time_limit()
        ),
        (2, 64, 750)
    );
    assert!(amdahl.validate().is_ok());
    let with = |f: &dyn Fn(&mut MoldModel), weight: Option<f64>| {
        let JobShape::Moldable { model, .. } = &amdahl else {
            unreachable!()
        };
        let mut m = model.unwrap();
        f(&mut m);
        JobShape::Moldable {
            configs: Vec::new(),
            model: Some(m),
            weight,
        }
        .validate()
        .unwrap_err()
        .to_string()
    };
    assert!(with(&|m| m.min_nodes = 0, None).contains("1 <= MIN <= MAX"));
    assert!(with(&|m| m.max_nodes = 1, None).contains("1 <= MIN <= MAX"));
    assert!(with(&|m| m.max_nodes = 1 << 20, None).contains("more than"));
    assert!(with(
        &|m| m.model = SpeedupModel::Amdahl {
            work: 10,
            serial: 1.5
        },
        None
    )
    .contains("between 0 and 1"));
    assert!(with(&|m| m.model = SpeedupModel::Linear { work: 0 }, None)
        .contains("work must be positive"));
    for w in [0.0, -1.0, f64::NAN, 1e7] {
        assert!(with(&|_| {}, Some(w)).contains("weight"), "{w}");
    }
}
