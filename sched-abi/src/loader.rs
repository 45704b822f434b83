//! The host side: finding, opening and checking a policy library, and calling its policy.
//!
//! A thin facade over abi_stable: nothing of abi_stable appears in this module's public
//! signatures, so the ABI crate could be replaced without touching the drivers.
//!
//! A library is never unloaded (abi_stable's design: Rust thread-locals make `dlclose`
//! unsound). Loading the same path again reuses the mapped copy; a library rebuilt at the same
//! path since it was first loaded is refused with [`LoadError::Rebuilt`]: restart to use it.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::SystemTime;

use abi_stable::library::{AbiHeaderRef, LibHeader, LibraryError, RawLibrary, RootModule};
use abi_stable::std_types::{RErr, ROk, RString, Tuple2};
use sched_core::{Changes, Params, Plan, Policy, Snapshot};

use crate::module::{AbiVersion, FfiError, FfiErrorKind, PolicyBox, PolicyMod_Ref, ABI_VERSION};
use crate::types::{FfiChanges, FfiSnapshot};

/// Why a policy library could not be loaded or instantiated.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// No file at the path, or none of the candidate files for a name.
    #[error("policy `{spec}` not found: tried {}", list(.tried))]
    NotFound {
        /// What the user asked for.
        spec: String,
        /// Every path tried, in order.
        tried: Vec<PathBuf>,
    },
    /// A file that the dynamic loader cannot open.
    #[error("{}: not a shared library: {reason}", .path.display())]
    NotSharedLibrary {
        /// The file.
        path: PathBuf,
        /// The dynamic loader's message.
        reason: String,
    },
    /// A shared library that does not export an esched policy.
    #[error("{}: a shared library, but not an esched policy: {reason}", .path.display())]
    NotAPolicy {
        /// The file.
        path: PathBuf,
        /// What is missing.
        reason: String,
    },
    /// An esched policy built for another ABI version or with another layout.
    #[error(
        "{}: ABI mismatch: this host speaks esched policy ABI {host}, the plugin {plugin}{}; \
         rebuild the plugin against this esched (a library already loaded stays loaded until \
         the process restarts)",
        .path.display(), detail_suffix(.detail)
    )]
    AbiMismatch {
        /// The file.
        path: PathBuf,
        /// The host's version.
        host: String,
        /// The plugin's version, as far as it can be read.
        plugin: String,
        /// Layout differences, shortened; empty for a plain version mismatch.
        detail: String,
    },
    /// The library's root module failed to initialise.
    #[error("{}: the policy library failed to initialise: {reason}", .path.display())]
    Init {
        /// The file.
        path: PathBuf,
        /// abi_stable's report.
        reason: String,
    },
    /// The file changed since this process loaded it.
    #[error(
        "{}: the library changed on disk since this process loaded it; a loaded library is never \
         unloaded, so the new build is used only after a restart",
        .path.display()
    )]
    Rebuilt {
        /// The file.
        path: PathBuf,
    },
    /// The policy's constructor refused a parameter.
    #[error("policy `{policy}` ({}): {message}", .path.display())]
    Params {
        /// The policy's name.
        policy: String,
        /// The file.
        path: PathBuf,
        /// The parameter at fault.
        key: String,
        /// The policy's message, naming the key.
        message: String,
    },
    /// The policy's constructor panicked.
    #[error("policy `{policy}` ({}): constructor panicked: {message}", .path.display())]
    ConstructorPanicked {
        /// The policy's name.
        policy: String,
        /// The file.
        path: PathBuf,
        /// The panic's message.
        message: String,
    },
}

fn list(paths: &[PathBuf]) -> String {
    paths
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

fn detail_suffix(detail: &str) -> String {
    if detail.is_empty() {
        String::new()
    } else {
        format!(" (layouts differ: {detail})")
    }
}

/// A failure of a call into a policy.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PluginError {
    /// The policy panicked; its instance is discarded and rebuilt on the next call.
    #[error("policy `{policy}` panicked: {message}")]
    Panicked {
        /// The policy's name.
        policy: String,
        /// The panic's message and location.
        message: String,
    },
    /// The instance discarded after a panic could not be rebuilt.
    #[error("policy `{policy}` could not be rebuilt after a panic: {message}")]
    Rebuild {
        /// The policy's name.
        policy: String,
        /// Why.
        message: String,
    },
}

/// Where names are looked for when no plugin directory is configured: next to the running
/// executable. In a cargo target directory, its `deps/` first: cargo rewrites the copy there
/// whenever anything depending on the plugin is rebuilt, while the copy beside the executable is
/// refreshed only when the plugin's own package is built, so it may be older. An executable
/// that itself lives in `deps/` (a test) also looks in the directory above.
pub fn default_plugin_dirs() -> Vec<PathBuf> {
    let Some(dir) = std::env::current_exe()
        .ok()
        .and_then(|e| e.parent().map(Path::to_path_buf))
    else {
        return Vec::new();
    };
    let mut dirs = vec![dir.join("deps"), dir.clone()];
    if dir.file_name().is_some_and(|n| n == "deps") {
        if let Some(up) = dir.parent() {
            dirs.push(up.to_path_buf());
        }
    }
    dirs
}

/// The file name of policy `name`'s library: that of the cdylib of crate `esched-<name>`.
pub fn library_file_name(name: &str) -> String {
    format!(
        "{}esched_{}{}",
        std::env::consts::DLL_PREFIX,
        name.replace('-', "_"),
        std::env::consts::DLL_SUFFIX
    )
}

/// Whether `spec` is a path (it has a `/` or ends in the platform's library suffix) rather than a
/// policy name.
pub fn is_path(spec: &str) -> bool {
    spec.contains(std::path::MAIN_SEPARATOR)
        || spec.contains('/')
        || spec.ends_with(std::env::consts::DLL_SUFFIX)
}

/// The file `spec` designates: a path as given, or a name looked up in `plugin_dir` (or the
/// [`default_plugin_dirs`]).
pub fn resolve(spec: &str, plugin_dir: Option<&Path>) -> Result<PathBuf, LoadError> {
    if is_path(spec) {
        let p = PathBuf::from(spec);
        return if p.exists() {
            Ok(p)
        } else {
            Err(LoadError::NotFound {
                spec: spec.to_string(),
                tried: vec![p],
            })
        };
    }
    let file = library_file_name(spec);
    let dirs = match plugin_dir {
        Some(d) => vec![d.to_path_buf()],
        None => default_plugin_dirs(),
    };
    let tried: Vec<PathBuf> = dirs.iter().map(|d| d.join(&file)).collect();
    match tried.iter().find(|p| p.is_file()) {
        Some(p) => Ok(p.clone()),
        None => Err(LoadError::NotFound {
            spec: spec.to_string(),
            tried,
        }),
    }
}

/// The identity of a file's content as far as the loader cares: size and modification time.
type Stamp = (u64, Option<SystemTime>);

/// Libraries opened by this process, by canonical path: they stay mapped for good.
static OPENED: Mutex<Option<HashMap<PathBuf, Stamp>>> = Mutex::new(None);

fn stamp(path: &Path) -> Option<Stamp> {
    std::fs::metadata(path)
        .ok()
        .map(|m| (m.len(), m.modified().ok()))
}

enum OpenFailure {
    Library(LibraryError),
    /// The symbols looked for.
    NoRootModule(Vec<String>),
}

/// The symbol [`crate::export_policy!`] defines for the crate the file is named after
/// (`lib<crate>.so`).
fn crate_root_symbol(path: &Path) -> String {
    let stem = path
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or_default();
    let krate = stem
        .strip_prefix(std::env::consts::DLL_PREFIX)
        .unwrap_or(stem);
    format!("{}{krate}", crate::export::ROOT_SYMBOL_PREFIX)
}

/// Other symbols that may hold the root module header: any export macro symbol named in the
/// file (a renamed library), then abi_stable's own fixed name (a library exported with
/// `#[export_root_module]`).
fn other_root_symbols(path: &Path) -> Vec<String> {
    let prefix = crate::export::ROOT_SYMBOL_PREFIX.as_bytes();
    let mut out: Vec<String> = Vec::new();
    if let Ok(bytes) = std::fs::read(path) {
        // The dynamic string table holds each exported name followed by a NUL.
        let mut i = 0;
        while let Some(at) = bytes[i..].windows(prefix.len()).position(|w| w == prefix) {
            let start = i + at;
            let end = bytes[start..]
                .iter()
                .position(|&b| b == 0)
                .map_or(bytes.len(), |n| start + n);
            let name = &bytes[start..end];
            if name.len() > prefix.len()
                && name.iter().all(|b| b.is_ascii_alphanumeric() || *b == b'_')
            {
                if let Ok(name) = std::str::from_utf8(name) {
                    if !out.iter().any(|o| o == name) {
                        out.push(name.to_string());
                    }
                }
            }
            i = start + prefix.len();
        }
    }
    out.push(abi_stable::library::ROOT_MODULE_LOADER_NAME.to_string());
    out
}

#[allow(unsafe_code)] // the one unsafe block below says why it is sound
fn open_header(path: &Path) -> Result<&'static LibHeader, OpenFailure> {
    let raw = RawLibrary::load_at(path).map_err(OpenFailure::Library)?;
    let first = crate_root_symbol(path);
    let mut tried = vec![first.clone()];
    let mut candidates = vec![first];
    let mut scanned = false;
    while let Some(name) = candidates.pop() {
        let with_nul = format!("{name}\0");
        // SAFETY: the symbol, when present, is a `LibHeader` static: the export macro and
        // abi_stable's `#[export_root_module]` both define one under these names, and
        // `upgrade` checks its abi_stable header before anything else is read.
        let found = unsafe { raw.get::<AbiHeaderRef>(with_nul.as_bytes()).map(|s| *s) };
        if let Ok(header) = found {
            let lib = header.upgrade().map_err(OpenFailure::Library)?;
            // Never unloaded: the header and everything reached through it are `'static`.
            std::mem::forget(raw);
            return Ok(lib);
        }
        if candidates.is_empty() && !scanned {
            // Reading the file is only worth it for a library that was renamed.
            scanned = true;
            let others: Vec<String> = other_root_symbols(path)
                .into_iter()
                .filter(|s| !tried.contains(s))
                .collect();
            tried.extend(others.iter().cloned());
            candidates = others.into_iter().rev().collect();
        }
    }
    Err(OpenFailure::NoRootModule(tried))
}

/// An opened, checked policy library, from which policies are instantiated.
#[derive(Clone)]
pub struct PolicyLibrary {
    path: PathBuf,
    name: String,
    abi_version: AbiVersion,
    module: PolicyMod_Ref,
}

/// The gist of abi_stable's layout report (hundreds of lines): where in the root module the
/// first difference is, what it is, and the expected and found layouts there.
fn layout_gist(report: &str) -> String {
    let lines: Vec<&str> = report.lines().map(str::trim).collect();
    let Some(first_err) = lines.iter().position(|l| l.starts_with("Error:")) else {
        return short(report);
    };
    let what = lines[first_err].trim_start_matches("Error:").trim();
    // The field path is listed under the last non-empty "N error(s)inside:" before it.
    let block = lines[..first_err]
        .iter()
        .rposition(|l| l.contains("error(s)inside:") && !l.starts_with("0 "))
        .unwrap_or(0);
    let path: Vec<&str> = lines[block..first_err]
        .iter()
        .take_while(|l| !l.starts_with("Layout of expected type:"))
        .filter_map(|l| l.strip_prefix("field_name:"))
        .filter(|f| !f.chars().all(|c| c.is_ascii_digit()) && !f.starts_with("__"))
        .collect();
    let after = |label: &str| {
        lines[first_err..]
            .iter()
            .skip_while(|l| **l != label)
            .nth(1)
            .map_or("?", |l| l.trim())
    };
    short(&format!(
        "at {}: {what}: expected `{}`, found `{}`",
        if path.is_empty() {
            "the root module".to_string()
        } else {
            path.join(".")
        },
        after("Expected:"),
        after("Found:")
    ))
}

fn short(text: &str) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() > 300 {
        format!("{}…", flat.chars().take(300).collect::<String>())
    } else {
        flat
    }
}

impl std::fmt::Debug for PolicyLibrary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PolicyLibrary")
            .field("path", &self.path)
            .field("name", &self.name)
            .field("abi_version", &self.abi_version)
            .finish()
    }
}

impl PolicyLibrary {
    /// Opens the library `spec` designates (see [`resolve`]) and checks that it is an esched
    /// policy of a compatible ABI.
    pub fn open(spec: &str, plugin_dir: Option<&Path>) -> Result<Self, LoadError> {
        let path = resolve(spec, plugin_dir)?;
        let canonical = path.canonicalize().unwrap_or_else(|_| path.clone());
        if !canonical.is_file() {
            return Err(LoadError::NotSharedLibrary {
                path,
                reason: "not a regular file".into(),
            });
        }
        let now = stamp(&canonical);
        {
            let opened = OPENED.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(before) = opened.as_ref().and_then(|m| m.get(&canonical)) {
                if Some(*before) != now {
                    return Err(LoadError::Rebuilt { path });
                }
            }
        }
        let header = open_header(&canonical).map_err(|e| match e {
            OpenFailure::Library(LibraryError::OpenError { err, .. }) => {
                LoadError::NotSharedLibrary {
                    path: path.clone(),
                    reason: short(&err.to_string()),
                }
            }
            OpenFailure::NoRootModule(tried) => LoadError::NotAPolicy {
                path: path.clone(),
                reason: format!(
                    "it exports no plugin root module (looked for {}; a policy crate ends with \
                     `sched_abi::export_policy!(TypeName);`)",
                    tried.join(", ")
                ),
            },
            OpenFailure::Library(LibraryError::InvalidAbiHeader(found)) => LoadError::AbiMismatch {
                path: path.clone(),
                host: ABI_VERSION.to_string(),
                plugin: format!("was built with an incompatible abi_stable ({found:?})"),
                detail: String::new(),
            },
            OpenFailure::Library(other) => LoadError::Init {
                path: path.clone(),
                reason: short(&other.to_string()),
            },
        })?;
        let consts = header.root_mod_consts();
        let root_name = consts.name().as_str();
        if root_name != <PolicyMod_Ref as RootModule>::NAME {
            return Err(LoadError::NotAPolicy {
                path,
                reason: format!(
                    "it exports an abi_stable root module of another kind (`{root_name}`)"
                ),
            });
        }
        let plugin_version = header.version_strings().version.as_str().to_string();
        let module = header
            .init_root_module::<PolicyMod_Ref>()
            .map_err(|e| match e {
                LibraryError::IncompatibleVersionNumber { actual_version, .. } => {
                    LoadError::AbiMismatch {
                        path: path.clone(),
                        host: ABI_VERSION.to_string(),
                        plugin: format!("speaks {}.{}", actual_version.major, actual_version.minor),
                        detail: String::new(),
                    }
                }
                LibraryError::AbiInstability(err) => LoadError::AbiMismatch {
                    path: path.clone(),
                    host: ABI_VERSION.to_string(),
                    plugin: format!("claims {plugin_version}"),
                    detail: layout_gist(&err.to_string()),
                },
                LibraryError::ParseVersionError(err) => LoadError::AbiMismatch {
                    path: path.clone(),
                    host: ABI_VERSION.to_string(),
                    plugin: format!("has an unreadable version ({err})"),
                    detail: String::new(),
                },
                other => LoadError::Init {
                    path: path.clone(),
                    reason: short(&other.to_string()),
                },
            })?;
        let abi_version = module.abi_version();
        if !ABI_VERSION.accepts(abi_version) {
            return Err(LoadError::AbiMismatch {
                path,
                host: ABI_VERSION.to_string(),
                plugin: format!("speaks {abi_version}"),
                detail: String::new(),
            });
        }
        OPENED
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get_or_insert_with(HashMap::new)
            .entry(canonical)
            .or_insert(now.unwrap_or((0, None)));
        Ok(PolicyLibrary {
            path,
            name: module.name().as_str().to_string(),
            abi_version,
            module,
        })
    }

    /// The policy's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The library's file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The ABI version the plugin was built for.
    pub fn abi_version(&self) -> AbiVersion {
        self.abi_version
    }

    fn construct(&self, params: &Params) -> Result<PolicyBox, (FfiErrorKind, String, String)> {
        let pairs = params
            .iter()
            .map(|(k, v)| Tuple2(RString::from(k), RString::from(v)))
            .collect();
        match (self.module.new())(pairs) {
            ROk(b) => Ok(b),
            RErr(FfiError { kind, key, message }) => {
                Err((kind, key.into_string(), message.into_string()))
            }
        }
    }

    /// A new policy instance built from `params`.
    pub fn instantiate(&self, params: &Params) -> Result<LoadedPolicy, LoadError> {
        let policy = self
            .construct(params)
            .map_err(|(kind, key, message)| match kind {
                FfiErrorKind::Panic => LoadError::ConstructorPanicked {
                    policy: self.name.clone(),
                    path: self.path.clone(),
                    message,
                },
                FfiErrorKind::UnknownParam | FfiErrorKind::BadParam => LoadError::Params {
                    policy: self.name.clone(),
                    path: self.path.clone(),
                    key,
                    message,
                },
            })?;
        Ok(LoadedPolicy {
            library: self.clone(),
            params: params.clone(),
            policy: Some(policy),
            scratch_plan: Plan::default(),
            spare_plan: None,
            told: Changes::default(),
            is_told: false,
        })
    }
}

/// Opens the library `spec` designates and builds its policy from `params`: a path (it has a
/// `/` or ends in `.so`) or a name, resolved to `<dir>/libesched_<name>.so` in `plugin_dir` or
/// the [`default_plugin_dirs`].
pub fn load(
    spec: &str,
    plugin_dir: Option<&Path>,
    params: &Params,
) -> Result<LoadedPolicy, LoadError> {
    PolicyLibrary::open(spec, plugin_dir)?.instantiate(params)
}

/// A policy instance living in a plugin.
///
/// After a panic the instance is considered poisoned: its state may be half-updated. It is
/// leaked, never dropped (its destructor runs plugin code that may panic again, and a panic in a
/// destructor called across the boundary aborts), and a fresh instance is built from the same
/// parameters on the next call.
pub struct LoadedPolicy {
    library: PolicyLibrary,
    params: Params,
    policy: Option<PolicyBox>,
    /// Where the plugin puts its answer, swapping out what was there for its policy to reuse.
    scratch_plan: Plan,
    /// A plan its host gave back ([`LoadedPolicy::recycle`]): the next call's `scratch_plan`.
    spare_plan: Option<Plan>,
    /// The driver's account for the next call ([`LoadedPolicy::expect_changes`]), in buffers
    /// kept from call to call.
    told: Changes,
    /// Whether `told` holds for the next call.
    is_told: bool,
}

impl std::fmt::Debug for LoadedPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoadedPolicy")
            .field("name", &self.library.name)
            .field("path", &self.library.path)
            .field("poisoned", &self.policy.is_none())
            .finish()
    }
}

impl LoadedPolicy {
    /// The policy's name.
    pub fn name(&self) -> &str {
        &self.library.name
    }

    /// The library it lives in.
    pub fn library(&self) -> &PolicyLibrary {
        &self.library
    }

    /// [`Policy::plan`] through the boundary, with a panic as an error.
    pub fn try_plan(&mut self, snapshot: &Snapshot<'_>) -> Result<Plan, PluginError> {
        self.try_call_lent(snapshot, None, false)
    }

    /// [`Policy::plan_starts`] through the boundary, with a panic as an error.
    pub fn try_plan_starts(&mut self, snapshot: &Snapshot<'_>) -> Result<Plan, PluginError> {
        self.try_call_lent(snapshot, None, true)
    }

    /// Takes back a plan its host is done with: it goes to the plugin's policy with the next
    /// call, to build a later answer in.
    pub fn recycle(&mut self, plan: Plan) {
        self.spare_plan = Some(plan);
    }

    /// Takes the driver's account of how the next call's lists differ from the last one's
    /// ([`Policy::expect_changes`]), told to the plugin's policy with that call. An instance
    /// rebuilt after a panic never planned on the last snapshot, so it is not told.
    pub fn expect_changes(&mut self, changes: &Changes) {
        // Field by field, into the kept buffers (a derived `clone_from` would allocate).
        self.told.running.clone_from(&changes.running);
        self.told.pending.clone_from(&changes.pending);
        self.is_told = true;
    }

    /// [`LoadedPolicy::try_plan_starts`] (`starts`) or [`LoadedPolicy::try_plan`], the plugin's
    /// policy told `changes`, lent for the call, or else the account
    /// [`LoadedPolicy::expect_changes`] kept, if any.
    pub fn try_call_lent(
        &mut self,
        snapshot: &Snapshot<'_>,
        changes: Option<&Changes>,
        starts: bool,
    ) -> Result<Plan, PluginError> {
        // A kept account holds for this call only, whatever happens to it.
        let kept = std::mem::take(&mut self.is_told);
        let told = changes.is_some() || kept;
        let (policy, told) = match &mut self.policy {
            Some(p) => (p, told),
            None => {
                let fresh = self
                    .library
                    .construct(&self.params)
                    .map_err(|(_, _, message)| PluginError::Rebuild {
                        policy: self.library.name.clone(),
                        message,
                    })?;
                (self.policy.insert(fresh), false)
            }
        };
        let changes = match (told, changes) {
            (false, _) => FfiChanges::NOT_TOLD,
            (true, Some(lent)) => FfiChanges::from(lent),
            (true, None) => FfiChanges::from(&self.told),
        };
        // The host's lists, lent for the call.
        let answer = policy.plan(
            &FfiSnapshot::from(snapshot),
            &changes,
            starts,
            &mut self.scratch_plan,
        );
        match answer {
            ROk(()) => {
                // The answer is the plugin's plan itself, moved, not converted.
                let spare = self.spare_plan.take().unwrap_or_default();
                Ok(std::mem::replace(&mut self.scratch_plan, spare))
            }
            RErr(e) => {
                // Leaked, not dropped: its state is not trusted, and its destructor would run
                // plugin code that may panic again, across the boundary.
                if let Some(poisoned) = self.policy.take() {
                    std::mem::forget(poisoned);
                }
                Err(PluginError::Panicked {
                    policy: self.library.name.clone(),
                    message: e.message.into_string(),
                })
            }
        }
    }
}

impl Policy for LoadedPolicy {
    /// The plan, or an empty one (with the failure logged) when the plugin panicked; drivers
    /// use [`crate::host::PolicyHost`], which keeps the last valid plan instead.
    fn plan(&mut self, snapshot: &Snapshot<'_>) -> Plan {
        self.try_plan(snapshot).unwrap_or_else(|e| {
            tracing::error!(policy = self.name(), "{e}");
            Plan::default()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_gist_names_the_field_path_and_the_difference() {
        let report = "Compared <this>:\n    big\n0 error(s)inside:\n    <other>\n\n4 error(s)inside:\n    <other>\n\n    \
            field_name:0\n    type:PolicyMod\n    field_name:new\n    field_name:__returns\n    field_name:plan\n\n\
            Layout of expected type:\n    x\n\nError:too many fields\nExpected:\n    4\nFound:\n    3\n\nError:unexpected field\n";
        assert_eq!(
            layout_gist(report),
            "at new.plan: too many fields: expected `4`, found `3`"
        );
        assert_eq!(layout_gist("no structure\n at all"), "no structure at all");
    }
}
