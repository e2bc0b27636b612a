//! Calls: functions of the program and of imported agents, the effects (tools, memory, files)
//! through [`super::Effects`], the configuration in scope, and `generate` with its attempts.

use super::*;

impl Interp<'_> {
    pub(super) fn arg(&mut self, ctx: &mut Ctx, args: &[Expr]) -> R<Value> {
        match args {
            [] => Ok(Value::Null),
            [one] => self.expr(ctx, one),
            _ => rt(format!("a call takes one argument, not {}", args.len())),
        }
    }

    pub(super) fn call(&mut self, ctx: &mut Ctx, callee: &Expr, args: &[Expr]) -> R<Value> {
        match &callee.kind {
            ExprKind::Name { name } => {
                let input = self.arg(ctx, args)?;
                let (mi, ai) = (ctx.module, ctx.agent);
                let program = self.modules[mi].program.clone();
                // A function of this agent first, then an agent.
                let own = program.agents().nth(ai).is_some_and(|a| {
                    a.body.iter().any(|m| matches!(m, Member::Func(f) if f.name.as_deref() == Some(name.as_str())))
                });
                if own {
                    return self.call_func(mi, ai, Some(name), input);
                }
                let (m, a) = self.agent_ref(mi, name)?;
                self.call_func(m, a, None, input)
            }
            ExprKind::Field {
                target,
                name: method,
                ..
            } => {
                if let ExprKind::Name { name } = &target.kind {
                    let is_var = ctx
                        .frames
                        .iter()
                        .any(|f| f.vars.iter().any(|v| v.name == *name));
                    if !is_var {
                        match self.global(ctx.module, name) {
                            Some((Some(ImportKind::Tool), uri)) => {
                                let a = self.arg(ctx, args)?;
                                return self.effect(ctx.module, name, &uri, method, a, true);
                            }
                            Some((Some(ImportKind::Memory), uri)) => {
                                let a = self.arg(ctx, args)?;
                                return self.effect(ctx.module, name, &uri, method, a, false);
                            }
                            Some((None | Some(ImportKind::Agent), _)) => {
                                let input = self.arg(ctx, args)?;
                                let (m, a) = self.agent_ref(ctx.module, name)?;
                                return self.call_func(m, a, Some(method), input);
                            }
                            _ => {}
                        }
                    }
                }
                if method == "add" {
                    let v = self.arg(ctx, args)?;
                    let (size, depth) = measure(&v);
                    self.hold(size + SLOT, "add")?;
                    return add(ctx, target, v, size + SLOT, depth).map(|()| Value::Null);
                }
                rt(format!("\"{method}\" cannot be called here"))
            }
            _ => rt("this cannot be called"),
        }
    }

    /// The module and agent index a name calls: an agent of the module, or an agent import.
    pub(super) fn agent_ref(&self, mi: usize, name: &str) -> R<(usize, usize)> {
        if let Some((_, m, a)) = self.modules[mi]
            .agent_imports
            .iter()
            .find(|(n, _, _)| n == name)
        {
            return Ok((*m, *a));
        }
        let program = &self.modules[mi].program;
        program
            .agents()
            .position(|a| a.name.as_deref() == Some(name))
            .map(|a| (mi, a))
            .ok_or_else(|| Fail(Code::AsRuntime, format!("\"{name}\" cannot be called")))
    }

    pub(super) fn effect(
        &mut self,
        mi: usize,
        name: &str,
        uri: &str,
        method: &str,
        args: Value,
        tool: bool,
    ) -> R<Value> {
        let result = if tool {
            self.effects.tool(uri, method, &args)
        } else {
            let from = self.modules[mi].key.clone();
            self.effects.memory(&from, uri, method, &args)
        };
        if let Ok(v) = &result {
            self.admit_value(v, &format!("{name}.{method}"))?;
        }
        let (res, err) = match &result {
            Ok(v) => (Some(self.traced(v)?), None),
            Err(e) => (None, Some(format!("{} {}", e.code, e.message))),
        };
        let args = self.traced(&args)?;
        self.event(if tool {
            TraceEvent::Tool {
                tool: name.to_string(),
                method: method.to_string(),
                args,
                result: res,
                error: err,
            }
        } else {
            TraceEvent::Memory {
                memory: name.to_string(),
                method: method.to_string(),
                args,
                result: res,
                error: err,
            }
        });
        Ok(result?)
    }

    /// The configuration value `key` where the code runs: the innermost override, else the
    /// agent's.
    pub(super) fn config(&self, ctx: &Ctx, key: ConfigKey) -> Option<Value> {
        for f in ctx.frames.iter().rev() {
            if let Some((_, v)) = f.config.iter().rev().find(|(k, _)| *k == key) {
                return Some(v.clone());
            }
        }
        let program = &self.modules[ctx.module].program;
        let agent = program.agents().nth(ctx.agent)?;
        agent.body.iter().rev().find_map(|m| match m {
            Member::Config(c) if c.key == key => Some(match (&c.key, &c.value.kind) {
                (ConfigKey::Model, ExprKind::Name { name }) => Value::String(name.clone()),
                (_, ExprKind::Str { value }) => Value::String(value.clone()),
                _ => Value::Null,
            }),
            _ => None,
        })
    }

    pub(super) fn generate(
        &mut self,
        ctx: &mut Ctx,
        options: &[(String, Expr)],
        shape: &[Field],
    ) -> R<Value> {
        let mut input = None;
        // `attempts` counts retries (the `.as` specification: "the number of retries when JSON parsing fails or
        // the shape does not match; default 1"): one bad answer is asked again once by default.
        let (mut limit, mut retries, mut debug) = (None, 1u64, false);
        for (k, e) in options {
            let v = self.expr(ctx, e)?;
            match k.as_str() {
                "input" => input = Some(as_text(&v)),
                "limit" => {
                    limit = Some(v.as_u64().filter(|n| *n > 0).ok_or_else(|| {
                        Fail(
                            Code::AsGenerate,
                            format!("limit must be a whole number of at least 1, not {v}"),
                        )
                    })?);
                }
                "attempts" => {
                    retries = v.as_u64().filter(|n| *n <= MAX_RETRIES).ok_or_else(|| {
                        Fail(
                            Code::AsGenerate,
                            format!(
                                "attempts (retries) must be a whole number from 0 to {MAX_RETRIES}, not {v}"
                            ),
                        )
                    })?;
                }
                "debug" => debug = truthy(&v),
                other => {
                    return fail(
                        Code::AsGenerate,
                        format!("generate has no option \"{other}\""),
                    )
                }
            }
        }
        let Some(input) = input else {
            return fail(Code::AsGenerate, "generate needs an input");
        };
        let model_name = match self.config(ctx, ConfigKey::Model) {
            Some(Value::String(n)) => n,
            _ => {
                return fail(
                    Code::AsGenerate,
                    "no model: set model NAME in the agent or the function",
                )
            }
        };
        let model = match self.global(ctx.module, &model_name) {
            Some((Some(ImportKind::Llm), uri)) => uri,
            _ => {
                return fail(
                    Code::AsGenerate,
                    format!("\"{model_name}\" is not an imported llm"),
                )
            }
        };
        // The prompt: role, description, the used context (evaluated now), the instruction and
        // the shape. Nothing that was not used reaches it.
        let mut prompt = String::new();
        if let Some(Value::String(r)) = self.config(ctx, ConfigKey::Role) {
            prompt.push_str(&format!("Role: {r}\n"));
        }
        if let Some(Value::String(d)) = self.config(ctx, ConfigKey::Description) {
            prompt.push_str(&format!("Description: {d}\n"));
        }
        let uses: Vec<UseDecl> = ctx
            .frames
            .iter()
            .flat_map(|f| f.uses.iter().cloned())
            .collect();
        // Sections are separated by an empty line.
        let gap = |p: &String| if p.is_empty() { "" } else { "\n" };
        if !uses.is_empty() {
            prompt.push_str(gap(&prompt));
            prompt.push_str("Context:\n");
            for u in &uses {
                let v = self.expr(ctx, &u.expr)?;
                prompt.push_str(&format!(
                    "[{}]\n{}\n",
                    label(&u.expr),
                    cut(&as_text(&v), u.budget)
                ));
            }
        }
        prompt.push_str(gap(&prompt));
        prompt.push_str(&format!("Instruction:\n{input}\n"));
        self.charge(prompt.len(), "the prompt")?;
        let shape = Shape::Object(shape.to_vec());
        prompt.push_str(&format!(
            "\nAnswer with one JSON object only, of this shape: {}\n",
            describe_shape(&shape)
        ));
        let mut tries: Vec<Attempt> = Vec::new();
        let mut current = prompt.clone();
        let mut correction: Option<String> = None;
        let start = self.effects.now_ms();
        let mut outcome: R<Value> = fail(Code::AsShape, "no attempt was made");
        for n in 1..=retries + 1 {
            if debug {
                self.effects.debug(&current);
            }
            let call = ModelCall {
                model: model.clone(),
                prompt: current.clone(),
                limit,
                attempt: u32::try_from(n).unwrap_or(u32::MAX),
                correction: correction.clone(),
                shape: shape.clone(),
            };
            let answer = match self.effects.generate(&call) {
                Ok(a) => {
                    // The attempt (prompt and answer) stays in the trace.
                    self.hold(current.len() + a.len(), "the model's answers")?;
                    a
                }
                Err(e) => {
                    // A provider error fails at once, without retries.
                    outcome = Err(e.into());
                    break;
                }
            };
            let reading = read_answer(&answer, &shape);
            let candidates = u32::try_from(reading.candidates).unwrap_or(u32::MAX);
            match reading.value {
                Ok(v) => {
                    tries.push(Attempt {
                        prompt: current.clone(),
                        answer,
                        error: None,
                        source: Some(reading.source),
                        repairs: reading.repairs,
                        score: reading.score,
                        candidates,
                    });
                    outcome = Ok(v);
                    break;
                }
                Err(why) => {
                    tries.push(Attempt {
                        prompt: current.clone(),
                        answer,
                        error: Some(why.clone()),
                        source: None,
                        repairs: Vec::new(),
                        score: 0,
                        candidates,
                    });
                    outcome = fail(
                        Code::AsShape,
                        format!(
                            "the model's answer did not fit after {n} {} ({} {}): {why}",
                            if n == 1 { "try" } else { "tries" },
                            n - 1,
                            if n == 2 { "retry" } else { "retries" }
                        ),
                    );
                    current = format!(
                        "{prompt}\nYour previous answer was not accepted: {why}. Answer again with one JSON object only.\n"
                    );
                    correction = Some(why);
                }
            }
        }
        let duration_ms = self.effects.now_ms().saturating_sub(start);
        let via = self.effects.answered_by();
        let value = match outcome.as_ref().ok() {
            Some(v) => Some(self.traced(v)?),
            None => None,
        };
        self.event(TraceEvent::Generate {
            model,
            via,
            duration_ms,
            limit,
            attempts: tries,
            value,
        });
        outcome
    }
}

pub(super) fn cap_value(e: &Expr) -> u64 {
    match &e.kind {
        ExprKind::Num { text } => whole_number(text).unwrap_or(0),
        _ => 0,
    }
}

pub(super) fn pick_func<'a>(agent: &'a Agent, name: Option<&str>) -> Result<&'a Func, String> {
    let funcs: Vec<&Func> = agent.funcs().collect();
    let an = agent.name.as_deref().unwrap_or("main");
    match name {
        Some(n) => funcs
            .iter()
            .find(|f| f.name.as_deref() == Some(n))
            .copied()
            .ok_or_else(|| format!("agent \"{an}\" has no function \"{n}\"")),
        None => funcs
            .iter()
            .find(|f| f.main)
            .or(if funcs.len() == 1 {
                funcs.first()
            } else {
                None
            })
            .copied()
            .ok_or_else(|| format!("agent \"{an}\" has no main func; name one")),
    }
}

pub(super) fn field(t: &Value, name: &str) -> R<Value> {
    match (t, name) {
        (Value::Array(items), "length") => Ok(Value::from(items.len())),
        (Value::String(s), "length") => Ok(Value::from(s.chars().count())),
        // The list's JSON-safe view: the list itself (every value here is already JSON).
        (Value::Array(_), "summary") => Ok(t.clone()),
        (Value::Object(m), _) => Ok(m.get(name).cloned().unwrap_or(Value::Null)),
        _ => rt(format!("{} has no field \"{name}\"", kind_of(t))),
    }
}

/// `place.add(v)`: `place` is a variable or a field path of one, holding a list. `size` and
/// `depth` are `v`'s ([`measure`]), counted by the caller; the variable's size grows by them.
pub(super) fn add(ctx: &mut Ctx, place: &Expr, v: Value, size: usize, depth: usize) -> R<()> {
    let mut path: Vec<&str> = Vec::new();
    let mut e = place;
    loop {
        match &e.kind {
            ExprKind::Name { name } => {
                path.push(name);
                break;
            }
            ExprKind::Field { target, name, .. } => {
                path.push(name);
                e = target;
            }
            _ => return rt("add needs a list held by a variable (or a field of one)"),
        }
    }
    path.reverse();
    let root = path[0];
    let slot = ctx
        .frames
        .iter_mut()
        .rev()
        .find_map(|f| f.vars.iter_mut().rev().find(|x| x.name == root))
        .ok_or_else(|| Fail(Code::AsRuntime, format!("unknown name \"{root}\"")))?;
    // The list sits `path.len() - 1` levels below the variable; the value one level below it.
    let new_depth = slot.depth.max(path.len() + depth);
    if new_depth > MAX_NESTING {
        return fail(
            Code::AsLimit,
            format!("add would nest \"{root}\" more than {MAX_NESTING} deep"),
        );
    }
    slot.size += size;
    slot.depth = new_depth;
    let mut target = &mut slot.value;
    for key in &path[1..] {
        target = match target {
            Value::Object(m) => m
                .get_mut(*key)
                .ok_or_else(|| Fail(Code::AsRuntime, format!("no field \"{key}\" to add to")))?,
            other => return rt(format!("{} has no field \"{key}\"", kind_of(other))),
        };
    }
    match target {
        Value::Array(items) => {
            items.push(v);
            Ok(())
        }
        // A failure ends the run, so what was counted for it no longer matters.
        other => rt(format!("add works on a list, not {}", kind_of(other))),
    }
}
