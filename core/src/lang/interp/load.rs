//! Starting a run: loading a module (parsed and checked once), its agent imports (a cycle is
//! refused), and calling an agent's function with its input in a fresh scope.

use super::*;

impl Interp<'_> {
    pub(super) fn start(
        &mut self,
        key: &str,
        program: Program,
        entry: &Entry,
    ) -> Result<Value, RunError> {
        let at = |it: &Self, f: Fail, stack: &[String]| {
            if let Some((key, d)) = &it.static_problem {
                return RunError {
                    code: f.0,
                    message: f.1,
                    stack: stack.to_vec(),
                    file: Some(key.clone()),
                    pos: d.pos(),
                    help: d.help.clone(),
                };
            }
            let place = it
                .failed_at
                .and_then(|(m, p)| Some((it.modules.get(m)?.key.clone(), p)));
            RunError {
                code: f.0,
                message: f.1,
                stack: stack.to_vec(),
                file: place.as_ref().map(|(k, _)| k.clone()),
                pos: place.map(|(_, p)| p),
                help: None,
            }
        };
        let root = self
            .load_program(key, program)
            .map_err(|f| at(self, f, &[]))?;
        let program = self.modules[root].program.clone();
        let agents: Vec<(usize, &Agent)> = program.agents().enumerate().collect();
        let chosen = match &entry.agent {
            Some(name) => agents
                .iter()
                .find(|(_, a)| a.name.as_deref() == Some(name.as_str())),
            None => agents
                .iter()
                .find(|(_, a)| a.main)
                .or(if agents.len() == 1 {
                    agents.first()
                } else {
                    None
                }),
        };
        let Some((ai, agent)) = chosen.copied() else {
            let names: Vec<String> = agents.iter().filter_map(|(_, a)| a.name.clone()).collect();
            return Err(at(
                self,
                Fail(
                    Code::AsEntry,
                    match &entry.agent {
                        Some(n) => format!("no agent \"{n}\" (agents: {})", names.join(", ")),
                        None => "no main agent to start with; pass --agent".into(),
                    },
                ),
                &[],
            ));
        };
        let func = match pick_func(agent, entry.func.as_deref()) {
            Ok(f) => f,
            Err(m) => return Err(at(self, Fail(Code::AsEntry, m), &[])),
        };
        let name = func.name.clone();
        self.call_func(root, ai, name.as_deref(), entry.input.clone())
            .map_err(|f| at(self, f, &self.stack))
    }

    /// Parses and checks a module and, recursively, its agent imports. Returns its index.
    pub(super) fn load(&mut self, key: &str, source: &str) -> R<usize> {
        if let Some(i) = self.modules.iter().position(|m| m.key == key) {
            return Ok(i);
        }
        let program = parser::parse(source).map_err(|d| self.static_fail(key, d))?;
        self.load_program(key, program)
    }

    /// A file that does not load: the failure carries the problem's own place and help.
    pub(super) fn static_fail(&mut self, key: &str, d: crate::diag::Diagnostic) -> Fail {
        let f = Fail(d.code, d.message.clone());
        self.static_problem = Some((key.to_string(), d));
        f
    }

    pub(super) fn load_program(&mut self, key: &str, program: Program) -> R<usize> {
        if self.modules.len() >= MAX_MODULES {
            return fail(
                Code::AsLimit,
                format!("more than {MAX_MODULES} .as files imported"),
            );
        }
        if let Some(d) = analyze::analyze(&program).into_iter().next() {
            return Err(self.static_fail(key, d));
        }
        let index = self.modules.len();
        self.loading.push(key.to_string());
        let program = Rc::new(program);
        self.modules.push(Module {
            key: key.to_string(),
            program: program.clone(),
            agent_imports: Vec::new(),
            files: Vec::new(),
        });
        for item in &program.items {
            if let Item::Import(i) = item {
                if i.kind == ImportKind::Agent {
                    let (k, text) = self.effects.load_agent(key, &i.uri)?;
                    if self.loading.contains(&k) {
                        return fail(
                            Code::AsImportCycle,
                            format!("{key}: importing {} closes a cycle of agent imports", i.uri),
                        );
                    }
                    let m = self.load(&k, &text)?;
                    let p = self.modules[m].program.clone();
                    let agents: Vec<&Agent> = p.agents().collect();
                    let pick = agents.iter().position(|a| a.main).or(if agents.len() == 1 {
                        Some(0)
                    } else {
                        None
                    });
                    let Some(ai) = pick else {
                        return fail(
                            Code::AsEntry,
                            format!(
                                "{}: an imported file needs a main agent (or only one agent)",
                                i.uri
                            ),
                        );
                    };
                    self.modules[index]
                        .agent_imports
                        .push((i.name.clone(), m, ai));
                }
            }
        }
        self.loading.pop();
        Ok(index)
    }

    pub(super) fn call_func(
        &mut self,
        mi: usize,
        ai: usize,
        func: Option<&str>,
        input: Value,
    ) -> R<Value> {
        if self.stack.len() >= MAX_CALL_DEPTH as usize {
            return fail(
                Code::AsDepth,
                format!("calls nested more than {MAX_CALL_DEPTH} deep (runaway recursion?)"),
            );
        }
        let program = self.modules[mi].program.clone();
        let Some(agent) = program.agents().nth(ai) else {
            return rt("no such agent");
        };
        let f = pick_func(agent, func).map_err(|m| Fail(Code::AsRuntime, m))?;
        let agent_name = agent.name.clone().unwrap_or_else(|| "main".into());
        let func_name = f.name.clone().unwrap_or_else(|| "main".into());
        self.stack.push(format!("{agent_name}.{func_name}"));
        self.trace.push(Vec::new());
        let start = self.effects.now_ms();
        let result = self.invoke(mi, ai, f, input.clone());
        let duration_ms = self.effects.now_ms().saturating_sub(start);
        let events = self.trace.pop().unwrap_or_default();
        let (output, error) = match &result {
            Ok(v) => (Some(self.traced(v)?), None),
            Err(Fail(c, m)) => (None, Some(format!("{c} {m}"))),
        };
        let input = self.traced(&input)?;
        self.event(TraceEvent::Call {
            agent: agent_name,
            func: func_name,
            duration_ms,
            input,
            output,
            error,
            events,
        });
        if result.is_ok() {
            self.stack.pop();
        }
        result
    }

    pub(super) fn invoke(&mut self, mi: usize, ai: usize, f: &Func, input: Value) -> R<Value> {
        let mut frame = Frame::default();
        if let Some(p) = &f.param {
            let value = match &p.shape {
                Some(fields) => check_object(&input, fields)
                    .map_err(|e| Fail(Code::AsShape, format!("the input does not fit: {e}")))?,
                None => input,
            };
            frame.vars.push(self.new_var(&p.name, value)?);
        }
        let mut ctx = Ctx {
            module: mi,
            agent: ai,
            frames: vec![frame],
        };
        let flow = self.block(&mut ctx, &f.body);
        for frame in ctx.frames {
            self.release(&frame);
        }
        match flow? {
            Flow::Return(v) => Ok(v),
            Flow::Normal => Ok(Value::Null),
        }
    }
}
