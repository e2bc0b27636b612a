// Seed 002, example 14: a fragment, with the plan, the results list and the Executor agent.
import llm Qwen from "ollama://localhost:11434/qwen3.6"

agent Executor {
    main func(step) {
        return step
    }
}

main agent Example {
    model Qwen

    main func(input) {
        plan = { steps: ["a", "b"] }
        results = []
        for step in plan.steps < 12 {
            result = Executor(step)
            results.add(result)
        }

        return results
    }
}
