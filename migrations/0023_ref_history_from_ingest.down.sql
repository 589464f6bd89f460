CREATE TRIGGER refs_added AFTER INSERT ON refs BEGIN
    INSERT INTO ref_history (target_group, target_kind, target_namespace, target_name, prefix,
                             first_referenced, last_referenced)
    VALUES (NEW.target_group, NEW.target_kind, NEW.target_namespace, NEW.target_name, NEW.prefix,
            strftime('%Y-%m-%dT%H:%M:%f000Z', 'now'), strftime('%Y-%m-%dT%H:%M:%f000Z', 'now'))
    ON CONFLICT DO UPDATE SET last_referenced = excluded.last_referenced;
END;
