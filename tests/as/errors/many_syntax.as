import llm Fast from "openai://gpt-4.1-mini"

main agent Planner {
    model Fast
    rol "Plans"

    main func(input) {
        plan = {
            goal: input.goal,
            steps: [1, 2,, 3]
        }
        x = = 2
        if plan.goal {
            return plan
        }
        return plan.steps[
    }

    func second(x) {
        y = x +
        return y
    }
}
