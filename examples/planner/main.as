// A planner/executor pair across files: the planner splits a goal into steps, the executor
// carries out each one, and the controller collects the reports.
//
//   keyless-host as run examples/planner/main.as --input '{"goal": "add a health check"}' --mock answers.json
import agent Planner from "./planner.as"
import agent Executor from "./executor.as"

main agent Controller {
    main func(input {
        goal string
    }) {
        plan = Planner(input)
        results = []
        for step in plan.steps < 10 {
            result = Executor({ goal: input.goal, step: step })
            results.add(result)
        }
        return { goal: input.goal, steps: plan.steps.length, results: results.summary }
    }
}
