//! TFLM's Makefiles as GNU make reads them for one configuration: the
//! sources, flags, include directories and downloads of a build.

use std::fs;
use std::path::{Path, PathBuf};

use crate::{walk, Kernels};

/// The configuration the Makefile is read for: TFLM's generic Cortex-M
/// target with the GNU toolchain, a default build, for the core `arch` and
/// the kernel set. (The core's `-m` flags and device defines are
/// [`cpu_flags`]'s; the target's specialized files, its `debug_log.cc` and
/// `micro_time.cc`, are left for the library's own.)
pub(crate) fn make_settings(kernels: Kernels, arch: &str) -> Vec<(&'static str, String)> {
    [
        ("TENSORFLOW_ROOT", ""),
        ("MAKEFILE_DIR", "tensorflow/lite/micro/tools/make"),
        ("TARGET", "cortex_m_generic"),
        ("TARGET_ARCH", arch),
        ("TOOLCHAIN", "gcc"),
        ("BUILD_TYPE", "default"),
        ("OPTIMIZED_KERNEL_DIR", kernels.optimized_kernel_dir()),
        ("CO_PROCESSOR", ""),
    ]
    .into_iter()
    .map(|(k, v)| (k, v.to_owned()))
    .collect()
}

/// The core a tree is read for when it is compiled for a host.
pub(crate) const DEFAULT_ARCH: &str = "cortex-m7+fp";

/// The variables of a TFLM Makefile as make sets them for one
/// configuration: the assignments (`:=`, `=`, `+=`, `?=`) in the branches of
/// the conditionals that configuration takes, through the files the
/// Makefile includes. What only a program could tell (`$(shell ...)` beyond
/// the two idioms TFLM's Makefiles use to list and name things, `$(call
/// ...)`) is unknown, and a conditional on something unknown takes neither
/// branch; a variable whose value is unknown is an error when asked for.
pub(crate) struct Make<'a> {
    root: &'a Path,
    vars: std::collections::HashMap<String, Value>,
    /// The configuration's variables, set as on make's command line: the
    /// Makefile's own assignments to them do not count.
    fixed: Vec<&'a str>,
    /// The downloads its branches make, in order: the scripts it runs as it
    /// is read, and the rules its `add_third_party_download` calls add.
    fetches: std::cell::RefCell<Vec<Fetch>>,
}

/// A third-party download a TFLM Makefile makes: a download script it runs
/// (`$(shell $(MAKEFILE_DIR)/NAME_download.sh ARGS)`), or a rule of its
/// `add_third_party_download` (`$(DOWNLOAD_SCRIPT) URL MD5 DIR ACTION
/// PARAM`), as the program and the words make gives the shell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fetch {
    /// Relative to the tree.
    pub script: String,
    pub args: Vec<String>,
}

/// The third-party downloads the Makefile of the tree at `root` makes for
/// TFLM's generic Cortex-M build with its reference kernels: the download
/// scripts it runs as it is read, in order, then the rules of its
/// `THIRD_PARTY_DOWNLOADS` (`URL!MD5!DIR!ACTION!PARAM`, each run as
/// `$(DOWNLOAD_SCRIPT)` with those words), quotes removed as the shell
/// removes them.
pub fn third_party_fetches(root: &Path) -> Result<Vec<Fetch>, String> {
    let makefile = root.join("tensorflow/lite/micro/tools/make/Makefile");
    let make = Make::read(root, &makefile, &make_settings(Kernels::Reference, DEFAULT_ARCH))?;
    let mut fetches = make.fetches.borrow().clone();
    let script = make.get("DOWNLOAD_SCRIPT")?;
    for rule in make.list("THIRD_PARTY_DOWNLOADS")? {
        let args = rule.split('!').filter(|w| !w.is_empty()).map(unquoted).collect();
        fetches.push(Fetch { script: script.clone(), args });
    }
    Ok(fetches)
}

#[derive(Debug, Clone)]
enum Value {
    /// Expanded when assigned (`:=`).
    Simple(Result<String, String>),
    /// Expanded when used (`=`).
    Recursive(String),
}

/// One open conditional: whether its current branch is taken (None: not
/// known), and whether an earlier branch was.
struct Branch {
    taken: Option<bool>,
    done: Option<bool>,
}

impl<'a> Make<'a> {
    pub(crate) fn read<V: AsRef<str>>(
        root: &'a Path,
        makefile: &Path,
        settings: &[(&'a str, V)],
    ) -> Result<Make<'a>, String> {
        let vars = settings.iter().map(|(k, v)| (k.to_string(), Value::Simple(Ok(v.as_ref().to_owned())))).collect();
        let mut make =
            Make { root, vars, fixed: settings.iter().map(|(k, _)| *k).collect(), fetches: Default::default() };
        make.include(makefile, 0)?;
        Ok(make)
    }

    fn include(&mut self, file: &Path, depth: usize) -> Result<(), String> {
        if depth > 8 {
            return Err(format!("{}: includes nest too deep", file.display()));
        }
        let text = fs::read_to_string(file).map_err(|e| format!("cannot read {}: {e}", file.display()))?;
        let joined = text.replace("\\\r\n", " ").replace("\\\n", " ");
        let mut branches: Vec<Branch> = Vec::new();
        // The macro being defined (`define NAME` ... `endef`): its name, where
        // the branch is taken, and its lines.
        let mut defining: Option<(Option<String>, Vec<&str>)> = None;
        for raw in joined.lines() {
            if let Some((name, body)) = defining.as_mut() {
                if raw.trim() != "endef" {
                    body.push(raw);
                    continue;
                }
                if let Some(name) = name.take() {
                    self.vars.insert(name, Value::Recursive(body.join("\n")));
                }
                defining = None;
                continue;
            }
            if raw.starts_with('\t') {
                continue; // a recipe
            }
            let line = match raw.find('#') {
                Some(at) if !raw[..at].ends_with('\\') => &raw[..at],
                _ => raw,
            }
            .trim();
            let word = line.split_whitespace().next().unwrap_or_default();
            let active = branches.iter().all(|b| b.taken == Some(true));
            match word {
                "define" => {
                    let name = line["define".len()..].trim().trim_end_matches('=').trim().to_owned();
                    defining = Some((active.then_some(name), Vec::new()));
                }
                "ifeq" | "ifneq" | "ifdef" | "ifndef" => {
                    let taken = if active { condition(self, line) } else { Some(false) };
                    branches.push(Branch { taken, done: taken });
                }
                "else" => {
                    let outer =
                        branches.len() <= 1 || branches[..branches.len() - 1].iter().all(|b| b.taken == Some(true));
                    let rest = line["else".len()..].trim();
                    let Some(branch) = branches.last_mut() else { continue };
                    let taken = match branch.done {
                        _ if !outer => Some(false),
                        Some(true) => Some(false),
                        None => None,
                        Some(false) if rest.is_empty() => Some(true),
                        Some(false) => condition(self, rest),
                    };
                    branch.done = match (branch.done, taken) {
                        (Some(true), _) | (_, Some(true)) => Some(true),
                        (None, _) | (_, None) => None,
                        _ => Some(false),
                    };
                    branch.taken = taken;
                }
                "endif" => {
                    branches.pop();
                }
                "include" | "-include" | "sinclude" if active => {
                    let paths = self.expand(&line[word.len()..]).unwrap_or_default();
                    for path in paths.split_whitespace() {
                        let path = self.root.join(path);
                        if path.is_file() {
                            self.include(&path, depth + 1)?;
                        }
                    }
                }
                _ if active && line.starts_with("$(eval $(call add_third_party_download,") => {
                    self.eval_download(line)?
                }
                _ if active => self.assign(line),
                _ => {}
            }
        }
        Ok(())
    }

    /// `$(eval $(call add_third_party_download,...))`: the assignment the
    /// macro makes, made. (The one `eval` hilmem evaluates: how TFLM's
    /// Makefiles list the third-party downloads of their rules.)
    fn eval_download(&mut self, line: &str) -> Result<(), String> {
        let text = self.expand(line["$(eval ".len()..].strip_suffix(')').unwrap_or_default())?;
        for line in text.lines() {
            self.assign(line.trim());
        }
        Ok(())
    }

    /// `VAR op value`, where op is `:=`, `::=`, `=`, `+=` or `?=`; anything
    /// else (a rule, a function called for its effect) is not an assignment.
    fn assign(&mut self, line: &str) {
        let line = line.strip_prefix("override ").or_else(|| line.strip_prefix("export ")).unwrap_or(line);
        let name_len =
            line.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.')).unwrap_or(line.len());
        let (name, rest) = line.split_at(name_len);
        let rest = rest.trim_start();
        let (op, value) = match ["::=", ":=", "+=", "?=", "="].iter().find(|op| rest.starts_with(**op)) {
            Some(op) if !name.is_empty() && !self.fixed.contains(&name) => (*op, rest[op.len()..].trim()),
            _ => return,
        };
        let value = match op {
            "=" => Value::Recursive(value.to_owned()),
            "?=" if self.vars.contains_key(name) => return,
            "?=" => Value::Recursive(value.to_owned()),
            "+=" => match self.vars.get(name).cloned() {
                Some(Value::Recursive(old)) => Value::Recursive(format!("{old} {value}")),
                Some(Value::Simple(old)) => {
                    Value::Simple(old.and_then(|old| Ok(format!("{old} {}", self.expand(value)?))))
                }
                None => Value::Recursive(value.to_owned()),
            },
            _ => Value::Simple(self.expand(value)),
        };
        self.vars.insert(name.to_owned(), value);
    }

    pub(crate) fn get(&self, name: &str) -> Result<String, String> {
        match self.vars.get(name) {
            None => Ok(String::new()),
            Some(Value::Simple(value)) => value.clone(),
            Some(Value::Recursive(text)) => self.expand(text),
        }
    }

    /// The words of variable `name`, which must be known.
    pub(crate) fn list(&self, name: &str) -> Result<Vec<String>, String> {
        let value = self.get(name).map_err(|why| format!("the Makefile's {name} cannot be read: {why}"))?;
        Ok(value.split_whitespace().map(str::to_owned).collect())
    }

    /// The third-party headers the Makefile lists (`THIRD_PARTY_CC_HDRS`,
    /// or `THIRD_PARTY_CC_HDRS_BASE` under the downloads where it has that)
    /// that the tree does not hold, relative to the tree.
    pub(crate) fn missing_downloads(&self) -> Result<Vec<String>, String> {
        let downloads = "tensorflow/lite/micro/tools/make/downloads";
        let headers = self.list("THIRD_PARTY_CC_HDRS")?.into_iter().filter(|h| !h.starts_with("third_party/"));
        let base = self.list("THIRD_PARTY_CC_HDRS_BASE")?.into_iter().map(|h| format!("{downloads}/{h}"));
        Ok(headers.chain(base).filter(|h| !self.root.join(h).exists()).collect())
    }

    /// The include directories the Makefile adds under its downloads
    /// (`INCLUDES`, `-I` words unquoted as the shell would) that exist.
    pub(crate) fn includes(&self, root: &Path) -> Result<Vec<PathBuf>, String> {
        let downloads = root.join("tensorflow/lite/micro/tools/make/downloads");
        Ok(self
            .list("INCLUDES")?
            .iter()
            .filter_map(|word| unquoted(word).strip_prefix("-I").map(|dir| root.join(dir)))
            .filter(|dir| dir.starts_with(&downloads) && dir.is_dir())
            .collect())
    }

    /// The flags of `name` (CXXFLAGS, CCFLAGS) that decide what the compiled
    /// objects are: the language standard, `-f` code generation options and
    /// the defines; not warnings, include paths, dependency files,
    /// optimisation (hilmem sets it as TFLM's rules do) or the `-m` target
    /// options and the core's device defines (the board sets those).
    pub(crate) fn flags(&self, name: &str) -> Result<Vec<String>, String> {
        let device = ["-DCPU_", "-DARMCM", "-DCMSIS_DEVICE", "-DARM_MODEL_USE_PMU"];
        Ok(self
            .list(name)?
            .into_iter()
            .filter(|f| f.starts_with("-std=") || f.starts_with("-f") || f.starts_with("-D"))
            .filter(|f| {
                !f.starts_with("-fmessage-length") && !f.contains('"') && !device.iter().any(|d| f.starts_with(d))
            })
            .collect())
    }

    /// `text` with its variable references and function calls expanded.
    fn expand(&self, text: &str) -> Result<String, String> {
        let mut out = String::new();
        let mut rest = text;
        while let Some(at) = rest.find('$') {
            out.push_str(&rest[..at]);
            let after = &rest[at + 1..];
            match after.chars().next() {
                Some('$') => {
                    out.push('$');
                    rest = &after[1..];
                }
                Some(open @ ('(' | '{')) => {
                    let close = if open == '(' { ')' } else { '}' };
                    let end = matching(after, open, close).ok_or_else(|| format!("unbalanced `{text}`"))?;
                    out.push_str(&self.call(&after[1..end])?);
                    rest = &after[end + 1..];
                }
                Some(c) => {
                    out.push_str(&self.get(&c.to_string())?);
                    rest = &after[c.len_utf8()..];
                }
                None => rest = "",
            }
        }
        out.push_str(rest);
        Ok(out)
    }

    /// The inside of one `$(...)`: a variable or a function.
    fn call(&self, inner: &str) -> Result<String, String> {
        let (function, args) = match inner.split_once(|c: char| c.is_whitespace()) {
            Some((f, args)) if !f.contains('$') => (f, args.trim_start()),
            _ => return self.get(self.expand(inner)?.trim()),
        };
        let args_list = || -> Result<Vec<String>, String> { split_args(args).iter().map(|a| self.expand(a)).collect() };
        let words = |s: &str| s.split_whitespace().map(str::to_owned).collect::<Vec<_>>();
        Ok(match function {
            "wildcard" => {
                self.expand(args)?.split_whitespace().flat_map(|p| wildcard(self.root, p)).collect::<Vec<_>>().join(" ")
            }
            "filter" | "filter-out" => {
                let a = args_list()?;
                let (patterns, list) =
                    (words(a.first().map_or("", String::as_str)), words(a.get(1).map_or("", String::as_str)));
                let keep = function == "filter";
                list.into_iter()
                    .filter(|w| patterns.iter().any(|p| pattern_match(p, w)) == keep)
                    .collect::<Vec<_>>()
                    .join(" ")
            }
            "findstring" => {
                let a = args_list()?;
                let (find, within) = (a.first().cloned().unwrap_or_default(), a.get(1).cloned().unwrap_or_default());
                if within.contains(&find) {
                    find
                } else {
                    String::new()
                }
            }
            "sort" => {
                let mut w = words(&self.expand(args)?);
                w.sort();
                w.dedup();
                w.join(" ")
            }
            "strip" => words(&self.expand(args)?).join(" "),
            "addprefix" | "addsuffix" => {
                let a = args_list()?;
                let (fix, list) = (a.first().cloned().unwrap_or_default(), words(a.get(1).map_or("", String::as_str)));
                list.iter()
                    .map(|w| if function == "addprefix" { format!("{fix}{w}") } else { format!("{w}{fix}") })
                    .collect::<Vec<_>>()
                    .join(" ")
            }
            "subst" => {
                let a = args_list()?;
                a.get(2).cloned().unwrap_or_default().replace(a[0].as_str(), a.get(1).map_or("", String::as_str))
            }
            "patsubst" => {
                let a = args_list()?;
                let (from, to) = (a.first().cloned().unwrap_or_default(), a.get(1).cloned().unwrap_or_default());
                words(a.get(2).map_or("", String::as_str))
                    .iter()
                    .map(|w| patsubst(&from, &to, w))
                    .collect::<Vec<_>>()
                    .join(" ")
            }
            "call" if args.starts_with("substitute_specialized_implementations,") => {
                let a = split_args(args);
                let (base, dir) = (a.get(1).map_or("", String::as_str), a.get(2).map_or("", String::as_str));
                self.specialized(&self.expand(base)?, self.expand(dir)?.trim())
            }
            "call" => {
                // A macro of the Makefile's own (`define`): its text with the
                // arguments as `$(1)`, `$(2)`, ..., expanded.
                let a = split_args(args);
                let name = self.expand(a.first().map_or("", String::as_str))?;
                let Some(Value::Recursive(body)) = self.vars.get(name.trim()) else {
                    return Err(format!("`$(call {args})`: `{}` is no macro hilmem knows", name.trim()));
                };
                let mut text = body.clone();
                for n in (1..10).rev() {
                    let arg = a.get(n).map(|arg| self.expand(arg)).transpose()?.unwrap_or_default();
                    text = text.replace(&format!("$({n})"), &arg);
                }
                self.expand(&text)?
            }
            "shell" if args.contains("specialize_files.py") => {
                let base = args.split("--base_files").nth(1).and_then(|rest| rest.split('"').nth(1));
                let base = base.ok_or_else(|| format!("`$(shell {args})`: no --base_files \"...\""))?;
                let dir = args.split("--specialize_directory").nth(1).unwrap_or_default();
                self.specialized(&self.expand(base)?, self.expand(dir)?.trim())
            }
            "shell" => self.shell(&self.expand(args)?)?,
            "info" | "warning" | "error" | "eval" => String::new(),
            _ => return Err(format!("`$({function} ...)` is not something hilmem can evaluate")),
        })
    }

    /// What TFLM's `specialize_files.py` makes of `base` (file paths) and
    /// `dir`: each file replaced by `dir`'s file of the same name where it
    /// has one. Only an optimized kernel directory (under `kernels/`)
    /// specializes: a platform's files (its `debug_log.cc`, its
    /// `micro_time.cc`) are the shim's and the board's business, and the
    /// library's own sources stand.
    fn specialized(&self, base: &str, dir: &str) -> String {
        let dir = dir.trim_end_matches('/');
        let kernels = dir.starts_with("tensorflow/lite/micro/kernels/") && self.root.join(dir).is_dir();
        base.split_whitespace()
            .map(|file| match file.rsplit('/').next() {
                Some(name) if kernels && self.root.join(dir).join(name).is_file() => format!("{dir}/{name}"),
                _ => file.to_owned(),
            })
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// The two commands TFLM's Makefiles run to make a list or a name: `find
    /// DIR -type d \( -path A -o -path B \) -prune -false -o -name "*.cc" ...`
    /// (every source below DIR outside the pruned directories), and `echo X
    /// | tr [a-z] [A-Z]`.
    fn shell(&self, command: &str) -> Result<String, String> {
        let words: Vec<&str> = command.split_whitespace().collect();
        if let ["echo", word, "|", "tr", "[a-z]", "[A-Z]"] = words.as_slice() {
            return Ok(word.to_uppercase());
        }
        let unknown = || format!("`$(shell {command})` is not something hilmem can evaluate");
        // The scripts that check an optimized kernel directory and fetch a
        // library answer SUCCESS when the directory is there (a download
        // hilmem never makes: without it the answer is unknown).
        if let [script, dir, ..] = words.as_slice() {
            let downloaded = script
                .rsplit('/')
                .next()
                .and_then(|name| name.strip_suffix("_download.sh"))
                .map(|lib| self.root.join(dir).join(lib));
            if downloaded.is_some() {
                let args = words[1..].iter().map(|w| (*w).to_owned()).collect();
                self.fetches.borrow_mut().push(Fetch { script: (*script).to_owned(), args });
            }
            let checked = script.ends_with("/check_optimized_kernel_dir.sh").then(|| self.root.join(dir));
            if let Some(dir) = downloaded.or(checked) {
                return if dir.is_dir() { Ok("SUCCESS".to_owned()) } else { Err(unknown()) };
            }
        }
        let ["find", dir, rest @ ..] = words.as_slice() else { return Err(unknown()) };
        let mut pruned = Vec::new();
        let mut extensions = Vec::new();
        let mut i = 0;
        while i < rest.len() {
            match rest[i] {
                "-path" => pruned.push(self.root.join(rest.get(i + 1).ok_or_else(unknown)?)),
                "-name" => {
                    let name = rest.get(i + 1).ok_or_else(unknown)?.trim_matches('"');
                    extensions.push(name.strip_prefix("*.").ok_or_else(unknown)?.to_owned());
                }
                "-type" | "-maxdepth" => i += 1,
                "\\(" | "\\)" | "-o" | "-prune" | "-false" | "d" => {}
                _ => return Err(unknown()),
            }
            i += if matches!(rest[i], "-path" | "-name") { 2 } else { 1 };
        }
        let extensions: Vec<&str> = extensions.iter().map(String::as_str).collect();
        // `find` of a directory that is not there finds nothing.
        let dir = self.root.join(dir);
        let found = if dir.is_dir() { walk(&dir, &extensions)? } else { Vec::new() };
        Ok(found
            .iter()
            .filter(|p| !pruned.iter().any(|d| p.starts_with(d)))
            .map(|p| p.strip_prefix(self.root).unwrap_or(p).display().to_string())
            .collect::<Vec<_>>()
            .join(" "))
    }
}

/// Whether the conditional on `line` (`ifeq (a,b)`, `ifneq "a" "b"`,
/// `ifdef V`, `ifndef V`) holds; None when it depends on something unknown.
fn condition(make: &Make, line: &str) -> Option<bool> {
    let (word, rest) = line.split_once(char::is_whitespace)?;
    let rest = rest.trim();
    match word {
        "ifdef" | "ifndef" => {
            let set = !make.get(rest).ok()?.trim().is_empty();
            Some(set == (word == "ifdef"))
        }
        "ifeq" | "ifneq" => {
            let (a, b) = if let Some(inner) = rest.strip_prefix('(').and_then(|r| r.strip_suffix(')')) {
                let args = split_args(inner);
                (args.first()?.clone(), args.get(1)?.clone())
            } else {
                let quoted: Vec<&str> = rest.split(['"', '\'']).map(str::trim).filter(|s| !s.is_empty()).collect();
                (quoted.first()?.to_string(), quoted.get(1).unwrap_or(&"").to_string())
            };
            let (a, b) = (make.expand(&a).ok()?, make.expand(&b).ok()?);
            Some((a.trim() == b.trim()) == (word == "ifeq"))
        }
        _ => None,
    }
}

/// A word as the shell passes it on: quotes removed, `\x` taken as `x`
/// (`-D"ARMCM7"` is `-DARMCM7`; `-DX=\"ARMCM7.h\"` is `-DX="ARMCM7.h"`).
pub(crate) fn unquoted(word: &str) -> String {
    let mut out = String::new();
    let mut quote: Option<char> = None;
    let mut chars = word.chars();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (None | Some('"'), '\\') => out.extend(chars.next()),
            (None, '"' | '\'') => quote = Some(c),
            (Some(q), _) if c == q => quote = None,
            _ => out.push(c),
        }
    }
    out
}

/// The position of the bracket that closes the one `text` starts with.
fn matching(text: &str, open: char, close: char) -> Option<usize> {
    let mut depth = 0;
    for (i, c) in text.char_indices() {
        if c == open {
            depth += 1;
        } else if c == close {
            depth -= 1;
            if depth == 0 {
                return Some(i);
            }
        }
    }
    None
}

/// A function's arguments: split at the commas outside brackets.
fn split_args(text: &str) -> Vec<String> {
    let mut args = vec![String::new()];
    let mut depth = 0;
    for c in text.chars() {
        match c {
            '(' | '{' => depth += 1,
            ')' | '}' => depth -= 1,
            ',' if depth == 0 => {
                args.push(String::new());
                continue;
            }
            _ => {}
        }
        args.last_mut().unwrap().push(c);
    }
    args
}

/// Whether `word` matches make's `pattern` (one `%` at most).
fn pattern_match(pattern: &str, word: &str) -> bool {
    match pattern.split_once('%') {
        Some((pre, post)) => word.len() >= pre.len() + post.len() && word.starts_with(pre) && word.ends_with(post),
        None => pattern == word,
    }
}

fn patsubst(from: &str, to: &str, word: &str) -> String {
    match from.split_once('%') {
        Some((pre, post)) if pattern_match(from, word) => {
            to.replacen('%', &word[pre.len()..word.len() - post.len()], 1)
        }
        None if from == word => to.to_owned(),
        _ => word.to_owned(),
    }
}

/// The files `pattern` (relative to `root`, `*` in its last part only)
/// names, in path order.
fn wildcard(root: &Path, pattern: &str) -> Vec<String> {
    let (dir, name) = pattern.rsplit_once('/').unwrap_or(("", pattern));
    if !name.contains('*') {
        return if root.join(pattern).exists() { vec![pattern.to_owned()] } else { Vec::new() };
    }
    let (pre, post) = name.split_once('*').unwrap();
    let mut found: Vec<String> = fs::read_dir(root.join(dir))
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.len() >= pre.len() + post.len() && n.starts_with(pre) && n.ends_with(post))
        .map(|n| if dir.is_empty() { n } else { format!("{dir}/{n}") })
        .collect();
    found.sort();
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::*;

    /// The idioms of TFLM's Makefiles over the years, read as make reads
    /// them for the Cortex-M build.
    #[test]
    fn a_makefile_is_read_as_make_reads_it_for_one_configuration() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for file in ["tensorflow/lite/micro/a.cc", "tensorflow/lite/micro/a_test.cc", "tensorflow/lite/micro/b.cc"] {
            write(root, file, "");
        }
        for file in ["tensorflow/lite/c/common.c", "tensorflow/lite/core/api/x.cc", "tensorflow/lite/experimental/e.cc"]
        {
            write(root, file, "");
        }
        write(root, "tensorflow/lite/micro/tools/make/downloads/lib/l.cc", "");
        write(
            root,
            "tensorflow/lite/micro/tools/make/Makefile",
            "TENSORFLOW_ROOT :=\n\
             HOST_OS := $(shell uname -s)\n\
             TARGET := $(HOST_OS)\n\
             include $(MAKEFILE_DIR)/more.inc\n\
             # a comment\n\
             LATE = $(LATER) \\\n  two\n\
             LATER := one\n\
             DEFAULTED ?= kept\n\
             DEFAULTED ?= not\n\
             ifeq ($(TARGET), $(HOST_OS))\n  HOSTED := yes\nelse\n  HOSTED := no\nendif\n\
             ifeq ($(TARGET_ARCH), cortex-m0)\n  CORE := M0\nelse ifeq ($(TARGET_ARCH), cortex-m7)\n  CORE := M7\nelse\n  $(error unknown)\nendif\n\
             ifneq ($(OPTIMIZED_KERNEL_DIR),)\n  KERNELS := optimized\nendif\n\
             ADDITIONAL_DEFINES := -D$(shell echo $(OPTIMIZE_FOR) | tr [a-z] [A-Z])\n\
             TFL_CC_SRCS := $(shell find $(TENSORFLOW_ROOT)tensorflow -type d \\( -path tensorflow/lite/experimental -o -path tensorflow/lite/micro \\) -prune -false -o -name \"*.cc\" -o -name \"*.c\")\n\
             MICROLITE_CC_BASE_SRCS := $(wildcard tensorflow/lite/micro/*.cc) $(TFL_CC_SRCS)\n\
             MICROLITE_CC_SRCS := $(filter-out $(MICROLITE_TEST_SRCS), $(MICROLITE_CC_BASE_SRCS))\n\
             MICROLITE_CC_SRCS := $(call substitute_specialized_implementations,$(MICROLITE_CC_SRCS),$(TARGET))\n\
             MICROLITE_TEST_SRCS := $(filter-out tensorflow/lite/micro/a_test.cc, $(MICROLITE_TEST_SRCS))\n\
             CXXFLAGS := -std=c++17 -fno-rtti -Wall -Ifoo -O2 -mthumb -DCPU_$(CORE)=1 -DKEEP $(ADDITIONAL_DEFINES)\n\
             \tCXXFLAGS := $(recipe lines are not assignments)\n\
             UNKNOWN := $(shell uname -m)\n",
        );
        write(
            root,
            "tensorflow/lite/micro/tools/make/more.inc",
            "MICROLITE_TEST_SRCS := tensorflow/lite/micro/a_test.cc\n",
        );
        let settings = [
            ("MAKEFILE_DIR", "tensorflow/lite/micro/tools/make"),
            ("TARGET", "cortex_m_generic"),
            ("TARGET_ARCH", "cortex-m7"),
            ("OPTIMIZED_KERNEL_DIR", ""),
            ("OPTIMIZE_FOR", "kernels_optimized_for_speed"),
        ];
        let make = Make::read(root, &root.join("tensorflow/lite/micro/tools/make/Makefile"), &settings).unwrap();
        let words = |name: &str| make.list(name).unwrap().join(" ");
        // The configuration's TARGET stands; a conditional on an unknown
        // (HOST_OS) takes neither branch.
        assert_eq!(words("TARGET"), "cortex_m_generic");
        assert_eq!(words("HOSTED"), "");
        assert_eq!((words("CORE"), words("KERNELS")), ("M7".into(), "".into()));
        assert_eq!((words("LATE"), words("DEFAULTED")), ("one two".into(), "kept".into()));
        // The library's sources as make lists them where it builds the
        // library: tests left out as they were then, no walk into
        // experimental/, micro/ or the downloads.
        assert_eq!(
            words("MICROLITE_CC_SRCS"),
            "tensorflow/lite/micro/a.cc tensorflow/lite/micro/b.cc tensorflow/lite/c/common.c tensorflow/lite/core/api/x.cc"
        );
        assert_eq!(
            make.flags("CXXFLAGS").unwrap(),
            ["-std=c++17", "-fno-rtti", "-DKEEP", "-DKERNELS_OPTIMIZED_FOR_SPEED"]
        );
        let unknown = make.list("UNKNOWN").unwrap_err();
        assert!(unknown.contains("UNKNOWN") && unknown.contains("$(shell uname -m)"), "{unknown}");
    }

    /// `OPTIMIZED_KERNEL_DIR=cmsis_nn` read as make reads it: each kernel of
    /// the optimized directory replaces the reference one of the same name,
    /// the library's sources and include directories come from its
    /// `ext_libs` file, quoted includes are unquoted; without the downloads
    /// the download script's answer is unknown and the tree is refused,
    /// naming them.
    #[test]
    fn an_optimized_kernel_directory_specializes_the_kernels() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let make = "tensorflow/lite/micro/tools/make";
        for file in ["tensorflow/lite/micro/kernels/conv.cc", "tensorflow/lite/micro/kernels/add.cc"] {
            write(root, file, "");
        }
        write(root, "tensorflow/lite/micro/kernels/cmsis_nn/conv.cc", "");
        write(
            root,
            &format!("{make}/Makefile"),
            "DOWNLOADS_DIR := $(MAKEFILE_DIR)/downloads\n\
             MICROLITE_CC_KERNEL_SRCS := tensorflow/lite/micro/kernels/add.cc tensorflow/lite/micro/kernels/conv.cc\n\
             CORE = M7\n\
             ARM_CPU := \"ARMC$(CORE)\"\n\
             INCLUDES := -I. -I$(DOWNLOADS_DIR)/cmsis/Device/$(ARM_CPU)/Include\n\
             ifneq ($(OPTIMIZED_KERNEL_DIR),)\n\
             \x20 include $(MAKEFILE_DIR)/ext_libs/$(OPTIMIZED_KERNEL_DIR).inc\n\
             \x20 MICROLITE_CC_KERNEL_SRCS := $(shell python3 $(MAKEFILE_DIR)/specialize_files.py \\\n\
             \x20   --base_files \"$(MICROLITE_CC_KERNEL_SRCS)\" \\\n\
             \x20   --specialize_directory tensorflow/lite/micro/kernels/$(OPTIMIZED_KERNEL_DIR))\n\
             endif\n",
        );
        write(
            root,
            &format!("{make}/ext_libs/cmsis_nn.inc"),
            "CMSIS_PATH := $(DOWNLOADS_DIR)/cmsis\n\
             DOWNLOAD_RESULT := $(shell $(MAKEFILE_DIR)/ext_libs/cmsis_download.sh ${DOWNLOADS_DIR} ${TENSORFLOW_ROOT})\n\
             ifneq ($(DOWNLOAD_RESULT), SUCCESS)\n  $(error no CMSIS)\nendif\n\
             SOURCES := $(shell find $(CMSIS_PATH)/Source -name \"*.c\")\n\
             INCLUDES += -I$(CMSIS_PATH)/Include\n",
        );
        let settings = make_settings(Kernels::CmsisNn, "cortex-m7+fp");
        let read = || Make::read(root, &root.join(make).join("Makefile"), &settings).unwrap();
        assert_eq!(
            read().list("MICROLITE_CC_KERNEL_SRCS").unwrap(),
            ["tensorflow/lite/micro/kernels/add.cc", "tensorflow/lite/micro/kernels/cmsis_nn/conv.cc"]
        );
        let unknown = read().list("DOWNLOAD_RESULT").unwrap_err();
        assert!(unknown.contains("cmsis_download.sh"), "{unknown}");
        assert_eq!(read().list("SOURCES").unwrap(), Vec::<String>::new(), "find of a missing directory");
        write(root, &format!("{make}/downloads/cmsis/Source/a/arm_x.c"), "");
        for dir in ["Include", "Device/ARMCM7/Include"] {
            fs::create_dir_all(root.join(make).join("downloads/cmsis").join(dir)).unwrap();
        }
        let make_read = read();
        assert_eq!(make_read.list("DOWNLOAD_RESULT").unwrap(), ["SUCCESS"]);
        assert_eq!(make_read.list("SOURCES").unwrap(), [format!("{make}/downloads/cmsis/Source/a/arm_x.c")]);
        let downloads = root.join(make).join("downloads/cmsis");
        assert_eq!(
            make_read.includes(root).unwrap(),
            [downloads.join("Device/ARMCM7/Include"), downloads.join("Include")]
        );
        assert_eq!(unquoted("-DX=\\\"\"ARMCM7\".h\\\""), "-DX=\"ARMCM7.h\"");
    }
}
