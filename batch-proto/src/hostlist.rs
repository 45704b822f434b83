//! Slurm's compressed host lists: `debug[001-004,007]`, `debug001,gpu[01-02]`.
//!
//! Names are grouped by their prefix (everything before the trailing digits); consecutive
//! numbers of the same width become ranges. Expansion accepts what compression produces plus
//! plain comma-separated names.

/// A host list that cannot be expanded.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("invalid host list `{list}`: {reason}")]
pub struct HostlistError {
    /// The input.
    pub list: String,
    /// What is wrong.
    pub reason: String,
}

/// Splits `name` into its prefix and trailing number (with its width).
fn split_name(name: &str) -> (&str, Option<(u64, usize)>) {
    let digits = name.bytes().rev().take_while(u8::is_ascii_digit).count();
    let (prefix, num) = name.split_at(name.len() - digits);
    // A run of more than 18 digits does not fit a u64 range: keep the name whole.
    match num.parse::<u64>() {
        Ok(n) if digits > 0 && digits <= 18 => (prefix, Some((n, digits))),
        _ => (name, None),
    }
}

/// Compresses `names` into Slurm's syntax, keeping the order of first appearance of each
/// prefix and sorting the numbers within a prefix.
pub fn compress<S: AsRef<str>>(names: &[S]) -> String {
    // (prefix, width) -> numbers; names without a number stay as they are.
    let mut groups: Vec<(String, usize, Vec<u64>)> = Vec::new();
    let mut order: Vec<Result<usize, String>> = Vec::new();
    for name in names {
        let name = name.as_ref();
        match split_name(name) {
            (prefix, Some((n, width))) => {
                match groups
                    .iter()
                    .position(|(p, w, _)| p == prefix && *w == width)
                {
                    Some(i) => groups[i].2.push(n),
                    None => {
                        groups.push((prefix.to_string(), width, vec![n]));
                        order.push(Ok(groups.len() - 1));
                    }
                }
            }
            (whole, None) => order.push(Err(whole.to_string())),
        }
    }
    let mut out = Vec::with_capacity(order.len());
    for item in order {
        match item {
            Err(name) => out.push(name),
            Ok(i) => {
                let (prefix, width, nums) = &mut groups[i];
                nums.sort_unstable();
                nums.dedup();
                let mut ranges: Vec<String> = Vec::new();
                let mut j = 0;
                while j < nums.len() {
                    let mut k = j;
                    while k + 1 < nums.len() && nums[k + 1] == nums[k] + 1 {
                        k += 1;
                    }
                    let w = *width;
                    ranges.push(if k == j {
                        format!("{:0w$}", nums[j])
                    } else {
                        format!("{:0w$}-{:0w$}", nums[j], nums[k])
                    });
                    j = k + 1;
                }
                if nums.len() == 1 {
                    out.push(format!("{prefix}{}", ranges[0]));
                } else {
                    out.push(format!("{prefix}[{}]", ranges.join(",")));
                }
            }
        }
    }
    out.join(",")
}

/// Expands a compressed host list into names, in order.
pub fn expand(list: &str) -> Result<Vec<String>, HostlistError> {
    expand_at_most(list, usize::MAX)
}

/// [`expand`], refusing a list of more than `max` names before making them: what a client
/// sends cannot make batchd build millions of names (`a[0-999999],a[0-999999],…`).
pub fn expand_at_most(list: &str, max: usize) -> Result<Vec<String>, HostlistError> {
    let err = |reason: &str| HostlistError {
        list: list.to_string(),
        reason: reason.to_string(),
    };
    let mut out = Vec::new();
    let mut rest = list.trim();
    while !rest.is_empty() {
        // One item: a name, optionally followed by `[ranges]`, up to the next top-level comma.
        let (item, tail) = match rest.find(['[', ',']) {
            Some(i) if rest.as_bytes()[i] == b'[' => {
                let close = rest[i..].find(']').ok_or_else(|| err("missing `]`"))? + i;
                (&rest[..=close], &rest[close + 1..])
            }
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, ""),
        };
        rest = tail.strip_prefix(',').unwrap_or(tail);
        if !tail.is_empty() && !tail.starts_with(',') {
            return Err(err("text after `]` must be followed by `,`"));
        }
        if let Some(open) = item.find('[') {
            let prefix = &item[..open];
            let inner = &item[open + 1..item.len() - 1];
            if inner.is_empty() {
                return Err(err("empty `[]`"));
            }
            for range in inner.split(',') {
                let (lo, hi) = range.split_once('-').unwrap_or((range, range));
                let width = lo.len();
                let a: u64 = lo
                    .parse()
                    .map_err(|_| err(&format!("`{lo}` is not a number")))?;
                let b: u64 = hi
                    .parse()
                    .map_err(|_| err(&format!("`{hi}` is not a number")))?;
                if b < a {
                    return Err(err(&format!("range `{range}` goes backwards")));
                }
                if b - a > 1_000_000 {
                    return Err(err(&format!("range `{range}` is too large")));
                }
                if (out.len() as u64).saturating_add(b - a + 1) > max as u64 {
                    return Err(err(&format!("more than {max} names")));
                }
                for n in a..=b {
                    out.push(format!("{prefix}{n:0width$}"));
                }
            }
        } else if item.is_empty() {
            return Err(err("empty name"));
        } else {
            if out.len() >= max {
                return Err(err(&format!("more than {max} names")));
            }
            out.push(item.to_string());
        }
    }
    Ok(out)
}

/// The stable name of node `index` (0-based) of pool `pool`: `debug001`. The width is three
/// digits, or more for pools of over 999 nodes, so names sort in node order.
pub fn node_name(pool: &str, index: u32, pool_size: u32) -> String {
    let width = pool_size.to_string().len().max(3);
    format!("{pool}{:0width$}", index + 1)
}

/// The index (0-based) of node `name` in pool `pool` of `pool_size` nodes: the inverse of
/// [`node_name`]. The digits may have any width (`debug1` is `debug001`); `None` for a name of
/// another pool or a number outside it.
pub fn node_index(pool: &str, name: &str, pool_size: u32) -> Option<u32> {
    name.strip_prefix(pool)
        .filter(|digits| !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|n| n.parse::<u32>().ok())
        .filter(|&n| n >= 1 && n <= pool_size)
        .map(|n| n - 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn node_index_inverts_node_name() {
        for (i, size) in [(0, 8), (7, 8), (999, 1000), (41, 12_000)] {
            assert_eq!(
                node_index("debug", &node_name("debug", i, size), size),
                Some(i)
            );
        }
        assert_eq!(node_index("debug", "debug1", 8), Some(0));
        for bad in [
            "debug000", "debug009", "batch001", "debug", "debug-01", "debug0x1",
        ] {
            assert_eq!(node_index("debug", bad, 8), None, "{bad}");
        }
    }

    #[test]
    fn compresses_like_slurm() {
        let names = ["debug001", "debug002", "debug003", "debug004", "debug007"];
        assert_eq!(compress(&names), "debug[001-004,007]");
        assert_eq!(compress(&["debug005"]), "debug005");
        assert_eq!(compress(&["a1", "b2", "a2", "login"]), "a[1-2],b2,login");
        assert_eq!(compress::<&str>(&[]), "");
    }

    #[test]
    fn expands_ranges_and_plain_names() {
        assert_eq!(
            expand("debug[001-003,007],login,gpu05").unwrap(),
            vec!["debug001", "debug002", "debug003", "debug007", "login", "gpu05"]
        );
        for bad in ["x[1-", "x[]", "x[3-1]", "x[a]", "x[1]y", "a,,b"] {
            assert!(expand(bad).is_err(), "{bad}");
        }
        assert_eq!(expand_at_most("a[1-3],b", 4).unwrap().len(), 4);
        for over in ["a[1-3],b,c", "a[1-3],b[1-2]", "a[0-1000000],a[0-1000000]"] {
            let e = expand_at_most(over, 4).unwrap_err();
            assert!(e.reason.contains("more than 4 names"), "{over}: {e}");
        }
    }

    #[test]
    fn node_names_are_stable_and_sortable() {
        assert_eq!(node_name("debug", 0, 8), "debug001");
        assert_eq!(node_name("big", 41, 2000), "big0042");
    }

    proptest! {
        #[test]
        fn expand_inverts_compress(idx in proptest::collection::btree_set(0u32..300, 0..40)) {
            let names: Vec<String> = idx.iter().map(|&i| node_name("p", i, 300)).collect();
            let list = compress(&names);
            prop_assert_eq!(expand(&list).unwrap(), names);
        }
    }
}
