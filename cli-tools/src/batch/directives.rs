//! `#ESUB` directives at the top of a job script, and Slurm's `#SBATCH` ones, read the same way
//! so that an existing sbatch script runs unchanged.
//!
//! As sbatch does, directives are read from the top of the script until the first line that is
//! neither blank nor a comment; later `#ESUB` lines are ordinary comments. A directive's text is
//! taken literally (no variable expansion) and split into words the way a shell would quote
//! them, so `#ESUB -J "my job"` is one option with one value.

use super::error::SpecError;

/// The marker that starts a directive line, at column 0.
pub const MAGIC: &str = "#ESUB";

/// Slurm's marker, read as [`MAGIC`] is (an `#ESUB` line wins for the same option).
pub const SBATCH_MAGIC: &str = "#SBATCH";

/// One directive line: its 1-based line number and its words.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Directive {
    /// Line number in the script, for error messages.
    pub line: usize,
    /// The words after `#ESUB`, unquoted.
    pub words: Vec<String>,
}

/// The `#ESUB` directives at the top of `script`, in order.
pub fn parse_directives(script: &str) -> Result<Vec<Directive>, SpecError> {
    parse_marked(script, MAGIC)
}

/// The directives marked `magic` (`#ESUB` or `#SBATCH`) at the top of `script`, in order. Both
/// kinds are comments, so either may follow the other: reading stops at the first command.
pub fn parse_marked(script: &str, magic: &str) -> Result<Vec<Directive>, SpecError> {
    let mut out = Vec::new();
    for (i, line) in script.lines().enumerate() {
        let trimmed = line.trim_start();
        if trimmed.is_empty() {
            continue;
        }
        if !trimmed.starts_with('#') {
            break;
        }
        let Some(rest) = line.strip_prefix(magic) else {
            continue;
        };
        // `#ESUBX` is an ordinary comment, as `#SBATCHX` is for sbatch.
        if !(rest.is_empty() || rest.starts_with(char::is_whitespace)) {
            continue;
        }
        let words = shell_split(rest).map_err(|reason| SpecError::Directive {
            line: i + 1,
            reason,
        })?;
        if !words.is_empty() {
            out.push(Directive { line: i + 1, words });
        }
    }
    Ok(out)
}

/// All `#ESUB` directive words of `script`, flattened, ready for an argument parser.
pub fn directive_args(script: &str) -> Result<Vec<String>, SpecError> {
    marked_args(script, MAGIC)
}

/// All directive words marked `magic` in `script`, flattened.
pub fn marked_args(script: &str, magic: &str) -> Result<Vec<String>, SpecError> {
    Ok(parse_marked(script, magic)?
        .into_iter()
        .flat_map(|d| d.words)
        .collect())
}

/// The last directive line of `script` (of the `#ESUB` ones first: they win over `#SBATCH`
/// ones) whose words satisfy `gives`, as its 1-based number and its text: where an error about
/// a value or an option that came from the script points the user.
pub fn locate(script: &str, gives: impl Fn(&[String]) -> bool) -> Option<(usize, String)> {
    [MAGIC, SBATCH_MAGIC].iter().find_map(|magic| {
        // A later directive overrides an earlier one, as in sbatch: the last is the one used.
        let found = parse_marked(script, magic)
            .ok()?
            .into_iter()
            .rfind(|d| gives(&d.words))?;
        let text = script.lines().nth(found.line - 1)?.trim().to_string();
        Some((found.line, text))
    })
}

/// Whether `words` give the option `opt` (`-N`, `--nodes`): as a word of its own, `--opt=V`,
/// or a short option with its value attached (`-N2`).
pub fn gives_option(words: &[String], opt: &str) -> bool {
    words.iter().any(|w| {
        w == opt
            || (opt.starts_with("--") && w.strip_prefix(opt).is_some_and(|r| r.starts_with('=')))
            || (opt.len() == 2 && !w.starts_with("--") && w.len() > 2 && w.starts_with(opt))
    })
}

/// Whether `words` give `value` to some option: as a word of its own, after `=`, or attached
/// to a short option (`-t10:00`).
pub fn gives_value(words: &[String], value: &str) -> bool {
    words.iter().any(|w| {
        w == value
            || w.split_once('=').is_some_and(|(_, v)| v == value)
            || (w.len() == 2 + value.len()
                && w.starts_with('-')
                && !w.starts_with("--")
                && w.ends_with(value))
    })
}

/// Splits `s` into words with POSIX-shell quoting: single quotes keep everything, double quotes
/// honour `\"`, `\\`, `\$` and `` \` ``, a backslash outside quotes escapes the next character,
/// and an unquoted `#` at the start of a word begins a comment. No expansion of any kind.
pub fn shell_split(s: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            '#' if !in_word => break,
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => cur.push(c),
                        None => return Err("unterminated single quote".to_string()),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(c @ ('"' | '\\' | '$' | '`')) => cur.push(c),
                            Some(c) => {
                                cur.push('\\');
                                cur.push(c);
                            }
                            None => return Err("unterminated double quote".to_string()),
                        },
                        Some(c) => cur.push(c),
                        None => return Err("unterminated double quote".to_string()),
                    }
                }
            }
            '\\' => {
                in_word = true;
                match chars.next() {
                    Some(c) => cur.push(c),
                    None => return Err("trailing backslash".to_string()),
                }
            }
            c => {
                in_word = true;
                cur.push(c);
            }
        }
    }
    if in_word {
        words.push(cur);
    }
    Ok(words)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn reads_until_first_command() {
        let script = "#!/bin/bash\n\
                      # a comment\n\
                      #ESUB -N 2\n\
                      \n\
                      #ESUB -J \"my job\" --time=1:00 # trailing comment\n\
                      #ESUBX -N 9\n  \
                      #ESUB -p indented\n\
                      echo hi\n\
                      #ESUB -N 4\n";
        let d = parse_directives(script).unwrap();
        assert_eq!(
            d,
            vec![
                Directive {
                    line: 3,
                    words: w(&["-N", "2"])
                },
                Directive {
                    line: 5,
                    words: w(&["-J", "my job", "--time=1:00"])
                },
            ]
        );
        assert_eq!(
            directive_args(script).unwrap(),
            w(&["-N", "2", "-J", "my job", "--time=1:00"])
        );
    }

    #[test]
    fn taken_literally() {
        let d = directive_args("#ESUB -o $HOME/out-%j.txt\n#ESUB -J 'a \"b\"'\n").unwrap();
        assert_eq!(d, w(&["-o", "$HOME/out-%j.txt", "-J", "a \"b\""]));
    }

    #[test]
    fn bad_quote_names_the_line() {
        let e = parse_directives("#!/bin/sh\n#ESUB -J 'oops\n").unwrap_err();
        assert_eq!(
            e.to_string(),
            "line 2 of the script: unterminated single quote"
        );
    }

    #[test]
    fn shell_split_cases() {
        assert_eq!(shell_split("  a  b\tc ").unwrap(), w(&["a", "b", "c"]));
        assert_eq!(
            shell_split(r#"a\ b "c\"d" 'e\f' x#y #z"#).unwrap(),
            w(&["a b", "c\"d", "e\\f", "x#y"])
        );
        assert_eq!(shell_split("''").unwrap(), w(&[""]));
        assert_eq!(shell_split(r#""a\nb""#).unwrap(), w(&["a\\nb"]));
        assert!(shell_split("\"x").is_err());
        assert!(shell_split("x\\").is_err());
    }

    #[test]
    fn sbatch_lines_are_read_with_their_own_marker() {
        let script = "#!/bin/sh\n#SBATCH -J x\n#ESUB -N 2\n#SBATCHX -N 9\n#SBATCH -N 3\necho\n#SBATCH -t 5\n";
        assert_eq!(
            marked_args(script, SBATCH_MAGIC).unwrap(),
            w(&["-J", "x", "-N", "3"])
        );
        assert_eq!(directive_args(script).unwrap(), w(&["-N", "2"]));
    }

    #[test]
    fn no_directives() {
        assert!(parse_directives("").unwrap().is_empty());
        assert!(parse_directives("echo\n#ESUB -N 3\n").unwrap().is_empty());
    }
}
