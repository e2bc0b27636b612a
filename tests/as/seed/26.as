import agent Planner from "./planner.as"
import agent Executor from "./executor.as"

main agent Controller {
    main func(input) {
        plan = Planner(input)
        results = []
        for step in plan.steps < 10 {
            result = Executor({ goal: input.goal, step: step })
            results.add(result)
        }
        return results.summary
    }
}
