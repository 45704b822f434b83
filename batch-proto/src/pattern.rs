//! sbatch's filename patterns for a job's output files (`-o/--output`, `-e/--error`).
//!
//! Every replacement sbatch documents is understood, or the pattern is refused; nothing stays
//! literal by accident (two array tasks writing one `slurm-%A_%a.out` would lose output):
//!
//! | escape | value |
//! | --- | --- |
//! | `%A` | the array's job id (the job's own id for a job that is not an array task) |
//! | `%a` | the array task id; `4294967294` for a job that is not an array task, as Slurm |
//! | `%b` | the array task id modulo 10 (`4` for a job that is not an array task, as Slurm) |
//! | `%J` | the job id: Slurm's `jobid.stepid`, which for the batch script is the job id alone |
//! | `%j` | the job id |
//! | `%N` | the short name of the job's first node (known at launch: expanded then) |
//! | `%n` | `0`, the node index of the batch script's node |
//! | `%s` | `batch`, the step of the batch script |
//! | `%t` | `0`, the task id of the batch script |
//! | `%u` | the owner's user name |
//! | `%x` | the job name |
//! | `%%` | one `%` |
//!
//! A number between `%` and the letter zero-pads a numeric value to that width (`%5j` is
//! `00042`), and is ignored for the others, as sbatch does.

/// Slurm's `NO_VAL`, which `%a` shows for a job that is not an array task.
pub const NO_ARRAY_TASK: u64 = 4_294_967_294;

/// What a pattern is expanded with.
#[derive(Clone, Copy, Debug)]
pub struct PatternVars<'a> {
    /// The job id.
    pub id: u64,
    /// The job name.
    pub name: &'a str,
    /// The owner's name.
    pub user: &'a str,
    /// `(array job id, task id)` for an array task.
    pub array: Option<(u64, u64)>,
    /// The first node's name, once the job has nodes.
    pub node: Option<&'a str>,
}

/// One piece of a parsed pattern.
enum Piece<'a> {
    Text(&'a str),
    Escape { width: usize, letter: char },
}

fn pieces(pattern: &str) -> Result<Vec<Piece<'_>>, String> {
    let mut out = Vec::new();
    let mut rest = pattern;
    while let Some(at) = rest.find('%') {
        if at > 0 {
            out.push(Piece::Text(&rest[..at]));
        }
        let after = &rest[at + 1..];
        let digits = after.bytes().take_while(u8::is_ascii_digit).count();
        let width = if digits == 0 {
            0
        } else {
            after[..digits]
                .parse::<usize>()
                .ok()
                .filter(|w| *w <= 64)
                .ok_or_else(|| format!("width '{}' is larger than 64", &after[..digits]))?
        };
        let Some(letter) = after[digits..].chars().next() else {
            return Err("a lone '%' at the end (write %% for a percent sign)".to_string());
        };
        if !"AabJjNnstux%".contains(letter) {
            return Err(format!(
                "'%{letter}' is not one of %A %a %b %J %j %N %n %s %t %u %x %%"
            ));
        }
        out.push(Piece::Escape { width, letter });
        rest = &after[digits + letter.len_utf8()..];
    }
    if !rest.is_empty() {
        out.push(Piece::Text(rest));
    }
    Ok(out)
}

/// Checks that every `%` escape of `pattern` is one sbatch knows.
pub fn check(pattern: &str) -> Result<(), String> {
    pieces(pattern).map(|_| ())
}

/// Whether `pattern` names the job's node (`%N`), so that it is expanded at launch.
pub fn names_node(pattern: &str) -> bool {
    pieces(pattern).is_ok_and(|p| {
        p.iter()
            .any(|p| matches!(p, Piece::Escape { letter: 'N', .. }))
    })
}

/// Expands `pattern` (already [`check`]ed: an unknown escape is kept as written). When
/// `vars.node` is `None` and the pattern names the node, `%N` is kept and every literal `%` of
/// the result doubled, so that [`expand_node`] finishes the job at launch.
pub fn expand(pattern: &str, vars: &PatternVars<'_>) -> String {
    let Ok(pieces) = pieces(pattern) else {
        return pattern.to_string();
    };
    let defer = vars.node.is_none()
        && pieces
            .iter()
            .any(|p| matches!(p, Piece::Escape { letter: 'N', .. }));
    let lit = |s: &str| {
        if defer {
            s.replace('%', "%%")
        } else {
            s.to_string()
        }
    };
    let num = |n: u64, width: usize| format!("{n:0width$}");
    let (array_id, task) = vars.array.unwrap_or((vars.id, NO_ARRAY_TASK));
    let mut out = String::with_capacity(pattern.len() + 16);
    for p in pieces {
        match p {
            Piece::Text(t) => out.push_str(&lit(t)),
            Piece::Escape { width, letter } => match letter {
                'A' => out.push_str(&num(array_id, width)),
                'a' => out.push_str(&num(task, width)),
                'b' => out.push_str(&num(task % 10, width)),
                // Slurm 22.05 writes the batch script's `%J` without a step: the job id.
                'J' => out.push_str(&num(vars.id, width)),
                'j' => out.push_str(&num(vars.id, width)),
                'n' | 't' => out.push_str(&num(0, width)),
                's' => out.push_str("batch"),
                'u' => out.push_str(&lit(vars.user)),
                'x' => out.push_str(&lit(vars.name)),
                'N' => match vars.node {
                    Some(n) => out.push_str(n),
                    None => out.push_str("%N"),
                },
                _ => out.push_str(if defer { "%%" } else { "%" }),
            },
        }
    }
    out
}

/// Finishes a path [`expand`] left waiting for the node: `%N` becomes `node`, `%%` one `%`.
pub fn expand_node(partial: &str, node: &str) -> String {
    let mut out = String::with_capacity(partial.len() + node.len());
    let mut chars = partial.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('N') => out.push_str(node),
            Some(o) => out.push(o),
            None => out.push('%'),
        }
    }
    out
}

/// Where a step's task runs, for srun's patterns: in a step `%s` is its number, `%J`
/// `JOB.STEP`, `%t` the task's id, `%n` its node's index in the step and `%N` its node.
#[derive(Clone, Copy, Debug)]
pub struct TaskVars<'a> {
    /// The step's number.
    pub step: u32,
    /// The task's id in the step.
    pub task: u32,
    /// Its node's index among the step's nodes.
    pub node_index: u32,
    /// Its node's name.
    pub node: &'a str,
}

/// Expands an `erun` (srun) output pattern for one task ([`check`]ed first: an unknown escape
/// is kept as written).
pub fn expand_task(pattern: &str, vars: &PatternVars<'_>, t: &TaskVars<'_>) -> String {
    let Ok(pieces) = pieces(pattern) else {
        return pattern.to_string();
    };
    let num = |n: u64, width: usize| format!("{n:0width$}");
    let (array_id, task) = vars.array.unwrap_or((vars.id, NO_ARRAY_TASK));
    let mut out = String::with_capacity(pattern.len() + 16);
    for p in pieces {
        match p {
            Piece::Text(s) => out.push_str(s),
            Piece::Escape { width, letter } => match letter {
                'A' => out.push_str(&num(array_id, width)),
                'a' => out.push_str(&num(task, width)),
                'b' => out.push_str(&num(task % 10, width)),
                'J' => out.push_str(&format!("{}.{}", num(vars.id, width), t.step)),
                'j' => out.push_str(&num(vars.id, width)),
                'n' => out.push_str(&num(u64::from(t.node_index), width)),
                't' => out.push_str(&num(u64::from(t.task), width)),
                's' => out.push_str(&num(u64::from(t.step), width)),
                'u' => out.push_str(vars.user),
                'x' => out.push_str(vars.name),
                'N' => out.push_str(t.node),
                _ => out.push('%'),
            },
        }
    }
    out
}

/// Whether `pattern` differs from task to task (`%t`, `%n`, `%N`): each task then writes its
/// own file, else all share one.
pub fn per_task(pattern: &str) -> bool {
    pieces(pattern).is_ok_and(|p| {
        p.iter().any(|p| {
            matches!(
                p,
                Piece::Escape {
                    letter: 't' | 'n' | 'N',
                    ..
                }
            )
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(array: Option<(u64, u64)>, node: Option<&'static str>) -> PatternVars<'static> {
        PatternVars {
            id: 42,
            name: "n%x",
            user: "u",
            array,
            node,
        }
    }

    #[test]
    fn every_escape() {
        let v = vars(Some((40, 3)), Some("debug001"));
        assert_eq!(
            expand("%A_%a_%b-%J-%j-%N-%n-%s-%t-%u-%x-%%", &v),
            "40_3_3-42-42-debug001-0-batch-0-u-n%x-%"
        );
        assert_eq!(expand("%5j.%3a.%4x.%2N", &v), "00042.003.n%x.debug001");
        let plain = vars(None, None);
        assert_eq!(expand("slurm-%A_%a.out", &plain), "slurm-42_4294967294.out");
        assert_eq!(expand("%b", &plain), "4");
        // Slurm 22.05: the batch script's `-o %J.out` is `ID.out` (`%J` is `jobid.stepid` for
        // a step, the job id alone for the batch script).
        assert_eq!(expand("%J.out", &plain), "42.out");
        assert_eq!(expand("%5J", &plain), "00042");
    }

    #[test]
    fn node_waits_for_launch() {
        let v = vars(None, None);
        let partial = expand("o-%x-%N-%%.txt", &v);
        assert_eq!(partial, "o-n%%x-%N-%%.txt");
        assert_eq!(expand_node(&partial, "d1"), "o-n%x-d1-%.txt");
        assert!(names_node("a%Nb") && !names_node("a%%Nb") && !names_node("a%j"));
        // Without %N everything is expanded at once, a literal "%N" included.
        assert_eq!(expand("%%N-%j", &v), "%N-42");
    }

    #[test]
    fn unknown_escapes_are_refused() {
        assert_eq!(
            check("out-%q").unwrap_err(),
            "'%q' is not one of %A %a %b %J %j %N %n %s %t %u %x %%"
        );
        assert!(check("out-%").is_err());
        assert!(check("%999j").is_err());
        assert!(check("%5j-%x-%%").is_ok());
    }
}
